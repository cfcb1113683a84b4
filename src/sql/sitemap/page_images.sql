-- The local images the live (`columns`) projections of a sitemap page's entries use (the
-- entries of src/sql/sitemap/entries_page.sql, rowids in (?2, ?3]), each by the key the page links:
-- the one its file URL names (perhaps an earlier file of the item, still served), else the item's
-- current file.
SELECT e.id AS content_id, coalesce(u.linked_key, m.storage_key) AS storage_key,
  CASE WHEN u.linked_key IS NULL OR u.linked_key = m.storage_key THEN m.content_hash IS NOT NULL
       ELSE EXISTS (SELECT 1 FROM media_versions AS v
                    WHERE v.storage_key = u.linked_key AND v.content_hash IS NOT NULL) END AS uploaded
FROM (SELECT rowid AS rid, id FROM {table}
      WHERE status = 'published' AND deleted_at IS NULL AND rowid > ?2 AND rowid <= ?3) AS e
CROSS JOIN _emdash_media_usage_sources AS s
CROSS JOIN _emdash_media_usage AS u
CROSS JOIN media AS m
WHERE s.source_key = 'content:' || ?1 || ':' || e.id || ':columns'
  AND s.content_status = 'published' AND s.content_deleted_at IS NULL
  AND u.source_key = s.source_key AND u.generation = s.current_generation
  AND u.media_id IS NOT NULL AND u.provider = 'local' AND u.media_kind = 'image'
  AND m.id = u.media_id
ORDER BY e.rid, u.field_path
