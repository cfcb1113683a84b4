-- Up to ?2 versions replaced more than ?1 days ago, oldest first, after (?3, ?4) in that order
-- (NULL: from the oldest): searched on the versions' replaced_at index from the cursor.
SELECT storage_key, replaced_at FROM media_versions INDEXED BY idx_media_versions_replaced
WHERE replaced_at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || ?1 || ' days')
  AND (replaced_at, storage_key) > (coalesce(?3, ''), coalesce(?4, ''))
ORDER BY replaced_at, storage_key
LIMIT ?2
