-- The current file of the media ?1 becomes one of its versions, replaced now by the token ?2
-- (in the batch that gives the item its next file, after the guard of `guard_current_file.sql`).
INSERT INTO media_versions (storage_key, media_id, filename, mime_type, size, width, height, content_hash, replaced_by)
SELECT storage_key, id, filename, mime_type, size, width, height, content_hash, ?2
FROM media WHERE id = ?1
