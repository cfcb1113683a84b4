-- Brings the media ?1 back from the trash; the row restored (NULL: no such media, or it was not
-- in the trash — restored meanwhile, or never trashed).
UPDATE media SET deleted_at = NULL WHERE id = ?1 AND deleted_at IS NOT NULL
RETURNING *
