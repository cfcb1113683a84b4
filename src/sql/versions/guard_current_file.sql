-- The guard of a replace and of a revert: a row (?1) only while the media ?2 exists outside the
-- trash and its current file is still the storage key ?3, the one the request read (a replace or
-- revert racing it has moved the item on: this one changes nothing, and neither's earlier file
-- is lost). A revert also needs its version ?4 to be one of this item's (NULL for a replace).
INSERT INTO _emdash_batch_guard (id)
SELECT CASE WHEN
  EXISTS (SELECT 1 FROM media WHERE id = ?2 AND storage_key = ?3 AND deleted_at IS NULL)
  AND (?4 IS NULL OR EXISTS (SELECT 1 FROM media_versions WHERE storage_key = ?4 AND media_id = ?2))
THEN ?1 END
