-- The version ?2 of the media ?1 is no longer one: the item's current file has its key again
-- (a revert, in the batch that made it current).
DELETE FROM media_versions WHERE storage_key = ?2 AND media_id = ?1
  AND EXISTS (SELECT 1 FROM media WHERE id = ?1 AND storage_key = ?2)
