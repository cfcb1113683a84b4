-- Brings the media ?1 back from the trash; the row as it is now (NULL: no such media).
UPDATE media SET deleted_at = NULL WHERE id = ?1
RETURNING *
