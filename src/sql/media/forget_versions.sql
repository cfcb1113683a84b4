-- The versions of media rows that are gone: those of the items of the JSON array ?1 whose row was
-- deleted by the statement before, in the same batch (a permanent delete or the trash's purge).
-- A version whose item still exists stays. The rows deleted, for their stored objects.
DELETE FROM media_versions
WHERE media_id IN (SELECT value FROM json_each(?1))
  AND NOT EXISTS (SELECT 1 FROM media AS m WHERE m.id = media_versions.media_id)
RETURNING media_id AS id, storage_key, content_hash
