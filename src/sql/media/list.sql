-- A window of the library (?4 = 0) or of the trash (?4 = 1), newest first after the cursor
-- (?1, ?2; NULL: from the newest; `~` sorts after any timestamp and id): at most ?3 rows, each
-- searched from the cursor on its partial index, and each with whether it passes the filters —
-- a file name containing ?5 (case-insensitive; NULL: any name), and in use (?6 = 'used') or not
-- ('unused'; NULL: either) by the same rule as the safe delete's guard (a current occurrence of a
-- registered collection, or an entry too large to index that lists it) — and, with ?7 = 1, how
-- many entries use it by that rule (each once), counted up to ?8: in use exactly when the count
-- is not 0. The caller pages over matches; what a page reads is bounded by the window, whatever
-- the library holds and however many entries use an item.
SELECT m.*,
  (?5 IS NULL OR instr(lower(m.filename), lower(?5)) > 0)
  AND (?6 IS NULL OR (?6 = 'used') = (
    EXISTS (SELECT 1 FROM _emdash_media_usage_current WHERE media_id = m.id)
    OR EXISTS (SELECT 1 FROM _emdash_media_usage_work AS w INDEXED BY idx__emdash_media_usage_work_unindexed,
                 json_each(w.unindexed_media) AS j
               WHERE w.unindexed_media IS NOT NULL AND j.value = m.id))) AS matches,
  -- Counted only for an item the search passes (no other is listed); an item the "unused"
  -- filter passes is used by no entry by this very rule: 0, with nothing to read.
  CASE WHEN ?7 = 1 AND (?5 IS NULL OR instr(lower(m.filename), lower(?5)) > 0) THEN
    CASE WHEN ?6 = 'unused' THEN 0 ELSE (
    SELECT count(*) FROM (
      SELECT * FROM (
        SELECT DISTINCT collection_id, content_id FROM _emdash_media_usage_current WHERE media_id = m.id LIMIT ?8)
      UNION
      SELECT w.collection_id, w.content_id
      FROM _emdash_media_usage_work AS w INDEXED BY idx__emdash_media_usage_work_unindexed, json_each(w.unindexed_media) AS j
      WHERE w.unindexed_media IS NOT NULL AND j.value = m.id
      LIMIT ?8)) END
  END AS usage_count
FROM (
  SELECT * FROM (
    SELECT * FROM media INDEXED BY idx_media_library
    WHERE deleted_at IS NULL AND ?4 = 0 AND (created_at, id) < (coalesce(?1, '~'), coalesce(?2, '~'))
    ORDER BY created_at DESC, id DESC LIMIT ?3)
  UNION ALL
  SELECT * FROM (
    SELECT * FROM media INDEXED BY idx_media_trash
    WHERE deleted_at IS NOT NULL AND ?4 = 1 AND (created_at, id) < (coalesce(?1, '~'), coalesce(?2, '~'))
    ORDER BY created_at DESC, id DESC LIMIT ?3)) AS m
ORDER BY m.created_at DESC, m.id DESC
