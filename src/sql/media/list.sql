-- A window of the library (?4 = 0) or of the trash (?4 = 1), newest first after the cursor
-- (?1, ?2; NULL: from the newest; `~` sorts after any timestamp and id): at most ?3 rows, each
-- searched from the cursor on its partial index, and each with whether it passes the filters.
-- `shown`: a file name containing each text of the JSON array ?5 (case-insensitive; NULL: any
-- name) and a MIME type among ?9
-- (a JSON array of lower-case entries, each a whole type, or a `type/` prefix ending in `/`;
-- NULL: any type). `matches`: shown, and in use (?6 = 'used') or not ('unused'; NULL: either) by
-- the same rule as the safe delete's guard (a current occurrence of a registered collection, or
-- an entry too large to index that lists it). With ?7 = 1, `usage_count`: how many entries use a
-- shown item by that rule (each once), counted up to ?8: in use exactly when the count is not 0.
-- The caller pages over matches; what a page reads is bounded by the window, whatever the library
-- holds and however many entries use an item.
WITH examined AS (
  SELECT m.*,
    (?5 IS NULL OR NOT EXISTS (
      SELECT 1 FROM json_each(?5) AS s WHERE instr(lower(m.filename), lower(s.value)) = 0))
    AND (?9 IS NULL OR EXISTS (
      SELECT 1 FROM json_each(?9) AS t
      WHERE CASE WHEN substr(t.value, -1) = '/' THEN substr(lower(m.mime_type), 1, length(t.value)) = t.value
                 ELSE lower(m.mime_type) = t.value END)) AS shown
  FROM (
    SELECT * FROM (
      SELECT * FROM media INDEXED BY idx_media_library
      WHERE deleted_at IS NULL AND ?4 = 0 AND (created_at, id) < (coalesce(?1, '~'), coalesce(?2, '~'))
      ORDER BY created_at DESC, id DESC LIMIT ?3)
    UNION ALL
    SELECT * FROM (
      SELECT * FROM media INDEXED BY idx_media_trash
      WHERE deleted_at IS NOT NULL AND ?4 = 1 AND (created_at, id) < (coalesce(?1, '~'), coalesce(?2, '~'))
      ORDER BY created_at DESC, id DESC LIMIT ?3)) AS m)
SELECT e.*,
  e.shown AND (?6 IS NULL OR (?6 = 'used') = (
    EXISTS (SELECT 1 FROM _emdash_media_usage_current WHERE media_id = e.id)
    OR EXISTS (SELECT 1 FROM _emdash_media_usage_work AS w INDEXED BY idx__emdash_media_usage_work_unindexed,
                 json_each(w.unindexed_media) AS j
               WHERE w.unindexed_media IS NOT NULL AND j.value = e.id))) AS matches,
  -- Counted only for a shown item (no other is listed); an item the "unused" filter passes is
  -- used by no entry by this very rule: 0, with nothing to read.
  CASE WHEN ?7 = 1 AND e.shown THEN
    CASE WHEN ?6 = 'unused' THEN 0 ELSE (
    SELECT count(*) FROM (
      SELECT * FROM (
        SELECT DISTINCT collection_id, content_id FROM _emdash_media_usage_current WHERE media_id = e.id LIMIT ?8)
      UNION
      SELECT w.collection_id, w.content_id
      FROM _emdash_media_usage_work AS w INDEXED BY idx__emdash_media_usage_work_unindexed, json_each(w.unindexed_media) AS j
      WHERE w.unindexed_media IS NOT NULL AND j.value = e.id
      LIMIT ?8)) END
  END AS usage_count
FROM examined AS e
ORDER BY e.created_at DESC, e.id DESC
