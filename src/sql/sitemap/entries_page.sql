SELECT id, slug, locale, updated_at FROM {table}
WHERE status = 'published' AND deleted_at IS NULL
ORDER BY id
LIMIT ?1 OFFSET ?2
