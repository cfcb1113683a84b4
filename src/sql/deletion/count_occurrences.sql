-- Counts the next page (up to ?4) of the deletion's occurrences (in its key range [?5, ?6), by
-- source key and id) after its cursor, in index order: adds them to `left_occurrences` and moves
-- the cursor past them in the same statement, so a repeated statement counts the next page, never
-- this one again. A short page ends the kind: the cursor goes back to the start for the next.
-- Only under the live lease (?1-?3) and while this kind (2) is the one being counted.
WITH cur AS (SELECT count_key AS k, count_tie AS t FROM _emdash_media_usage_collection_deletions
             WHERE collection_id = ?1),
page AS MATERIALIZED (
  SELECT source_key AS k, id AS t FROM _emdash_media_usage
  -- One lower bound, the cursor (the range's start before the first page), so the index is
  -- entered at the cursor rather than walked from the range's start.
  WHERE (source_key, id) > ((SELECT CASE WHEN k = '' THEN ?5 ELSE k END FROM cur),
                            (SELECT coalesce(t, '') FROM cur))
    AND source_key < ?6
  ORDER BY source_key, id LIMIT ?4),
edge AS MATERIALIZED (
  SELECT (SELECT count(*) FROM page) AS n, last.k, last.t
  FROM (SELECT 1) LEFT JOIN (SELECT k, t FROM page ORDER BY k DESC, t DESC LIMIT 1) AS last)
UPDATE _emdash_media_usage_collection_deletions
SET left_occurrences = left_occurrences + (SELECT n FROM edge),
    count_kind = CASE WHEN (SELECT n FROM edge) < ?4 THEN 3 ELSE 2 END,
    count_key = CASE WHEN (SELECT n FROM edge) < ?4 THEN '' ELSE (SELECT k FROM edge) END,
    count_tie = CASE WHEN (SELECT n FROM edge) < ?4 THEN NULL ELSE (SELECT t FROM edge) END
WHERE collection_id = ?1 AND count_kind = 2 AND {lease}
RETURNING *
