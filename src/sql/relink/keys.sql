-- The storage keys of the media item ?1: its current key (`current` 1; `trashed` 1 in the
-- trash) and its ?2 newest earlier keys.
SELECT storage_key, 1 AS current, deleted_at IS NOT NULL AS trashed FROM media WHERE id = ?1
UNION ALL
SELECT * FROM (
  SELECT storage_key, 0 AS current, 0 AS trashed FROM media_versions
  WHERE media_id = ?1
  ORDER BY replaced_at DESC, storage_key DESC
  LIMIT ?2)
