-- Moves the media ?1 to the trash (its row and object kept). Already trashed: no change.
UPDATE media SET deleted_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE id = ?1 AND deleted_at IS NULL
