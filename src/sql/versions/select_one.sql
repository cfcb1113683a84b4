-- The version ?2 of the media ?1 (its primary key), with no count of what links to it.
SELECT storage_key, filename, mime_type, size, width, height, content_hash, replaced_at, replaced_by, 0 AS linked
FROM media_versions WHERE storage_key = ?2 AND media_id = ?1
