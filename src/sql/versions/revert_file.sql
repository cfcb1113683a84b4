-- The media ?1 takes its version ?2 as its current file again: the key, file name, type, size,
-- dimensions and content hash the version recorded. Runs after its current file became a version
-- and before the version's row is dropped (`drop_version.sql`), in one guarded batch. The row as
-- it is now.
UPDATE media
SET (storage_key, filename, mime_type, size, width, height, content_hash) = (
  SELECT v.storage_key, v.filename, v.mime_type, v.size, v.width, v.height, v.content_hash
  FROM media_versions AS v WHERE v.storage_key = ?2 AND v.media_id = ?1)
WHERE id = ?1 AND EXISTS (SELECT 1 FROM media_versions AS v WHERE v.storage_key = ?2 AND v.media_id = ?1)
RETURNING *
