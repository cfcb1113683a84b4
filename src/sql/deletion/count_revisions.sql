-- Counts the next page (up to ?4) of the deletion's revisions (of the slug ?5, by entry and
-- rowid) after its cursor, in index order: adds them to `left_revisions` and moves the cursor
-- past them in the same statement, so a repeated statement counts the next page, never this one
-- again. A short page ends the kind: the cursor goes back to the start for the next. Only under
-- the live lease (?1-?3) and while this kind (1) is the one being counted.
WITH cur AS (SELECT count_key AS k, count_tie AS t FROM _emdash_media_usage_collection_deletions
             WHERE collection_id = ?1),
page AS MATERIALIZED (
  SELECT entry_id AS k, rowid AS t FROM revisions
  WHERE collection = ?5 AND (entry_id, rowid) > ((SELECT k FROM cur), (SELECT t FROM cur))
  ORDER BY entry_id, rowid LIMIT ?4),
edge AS MATERIALIZED (
  SELECT (SELECT count(*) FROM page) AS n, last.k, last.t
  FROM (SELECT 1) LEFT JOIN (SELECT k, t FROM page ORDER BY k DESC, t DESC LIMIT 1) AS last)
UPDATE _emdash_media_usage_collection_deletions
SET left_revisions = left_revisions + (SELECT n FROM edge),
    count_kind = CASE WHEN (SELECT n FROM edge) < ?4 THEN 2 ELSE 1 END,
    count_key = CASE WHEN (SELECT n FROM edge) < ?4 THEN '' ELSE (SELECT k FROM edge) END,
    count_tie = CASE WHEN (SELECT n FROM edge) < ?4 THEN NULL ELSE (SELECT t FROM edge) END
WHERE collection_id = ?1 AND count_kind = 1 AND {lease}
RETURNING *
