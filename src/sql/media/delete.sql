-- Deletes the media ?1 unconditionally: an admin's forced permanent delete. The row deleted, for
-- its stored object.
DELETE FROM media WHERE id = ?1
RETURNING id, storage_key, content_hash
