-- Counts the next page (up to ?4) of the deletion's work rows (a content id is unique in the
-- collection) after its cursor, in index order: adds them to `left_work` and moves the cursor
-- past them in the same statement, so a repeated statement counts the next page, never this one
-- again. A short page ends the kind: the cursor goes back to the start for the next. Only under
-- the live lease (?1-?3) and while this kind (0) is the one being counted.
WITH cur AS (SELECT count_key AS k, count_tie AS t FROM _emdash_media_usage_collection_deletions
             WHERE collection_id = ?1),
page AS MATERIALIZED (
  SELECT content_id AS k, NULL AS t FROM _emdash_media_usage_work
  WHERE collection_id = ?1 AND content_id > (SELECT k FROM cur)
  ORDER BY content_id LIMIT ?4),
edge AS MATERIALIZED (
  SELECT (SELECT count(*) FROM page) AS n, last.k, last.t
  FROM (SELECT 1) LEFT JOIN (SELECT k, t FROM page ORDER BY k DESC, t DESC LIMIT 1) AS last)
UPDATE _emdash_media_usage_collection_deletions
SET left_work = left_work + (SELECT n FROM edge),
    count_kind = CASE WHEN (SELECT n FROM edge) < ?4 THEN 1 ELSE 0 END,
    count_key = CASE WHEN (SELECT n FROM edge) < ?4 THEN '' ELSE (SELECT k FROM edge) END,
    count_tie = CASE WHEN (SELECT n FROM edge) < ?4 THEN NULL ELSE (SELECT t FROM edge) END
WHERE collection_id = ?1 AND count_kind = 0 AND {lease}
RETURNING *
