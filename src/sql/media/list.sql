-- Newest first, after the cursor (?1, ?2) (NULL: from the newest; `~` sorts after any timestamp
-- and id): a row-value range, so the index is searched from the cursor, not scanned to it.
SELECT * FROM media
WHERE (created_at, id) < (coalesce(?1, '~'), coalesce(?2, '~'))
ORDER BY created_at DESC, id DESC
LIMIT ?3
