-- Up to ?2 media trashed more than ?1 days ago, oldest first, after (?3, ?4) in that
-- order (NULL: from the oldest): searched on the trash's partial index from the cursor.
SELECT id, deleted_at FROM media INDEXED BY idx_media_trashed_at
WHERE deleted_at IS NOT NULL AND deleted_at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || ?1 || ' days')
  AND (deleted_at, id) > (coalesce(?3, ''), coalesce(?4, ''))
ORDER BY deleted_at, id
LIMIT ?2
