-- A window of the library (?4 = 0) or of the trash (?4 = 1), newest first after the cursor
-- (?1, ?2; NULL: from the newest; `~` sorts after any timestamp and id): at most ?3 rows, each
-- searched from the cursor on its partial index, and each with whether it passes the filters.
-- `shown`: a file name containing each text of the JSON array ?5 (case-insensitive; NULL: any
-- name) and a MIME type among ?9
-- (a JSON array of lower-case entries, each a whole type, or a `type/` prefix ending in `/`;
-- NULL: any type). `matches`: shown, and in use (?6 = 'used') or not ('unused'; NULL: either) by
-- the relation that blocks a delete (`uses/blocks_delete.sql`, the safe delete's guard's). With
-- ?7 = 1, `usage_count`: how many entries count as using a shown item, as the item's own
-- `usage.count` counts them (`uses/counts_as_use.sql`: entries in the trash do not count), each
-- once, counted up to ?8. An item in use may count 0 (only entries in the trash use it, say).
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
  e.shown AND (?6 IS NULL OR (?6 = 'used') = EXISTS ({blocks_delete})) AS matches,
  -- Counted only for a shown item (no other is listed); an item the "unused" filter passes is
  -- one nothing blocks from deletion, so nothing counts as using it either: 0, with nothing to
  -- read.
  CASE WHEN ?7 = 1 AND e.shown THEN
    CASE WHEN ?6 = 'unused' THEN 0 ELSE (
    SELECT count(*) FROM (SELECT DISTINCT collection_id, content_id FROM ({counts_as_use}) LIMIT ?8)) END
  END AS usage_count
FROM examined AS e
ORDER BY e.created_at DESC, e.id DESC
