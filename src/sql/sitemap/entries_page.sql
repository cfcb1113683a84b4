-- A sitemap page: the published, non-trashed entries whose rowid is in (?1, ?2], read from the
-- table's published index (keyset by rowid: no OFFSET, nothing outside the range is read).
SELECT id, slug, locale, updated_at FROM {table}
WHERE status = 'published' AND deleted_at IS NULL AND rowid > ?1 AND rowid <= ?2
ORDER BY rowid
