SELECT * FROM media
WHERE (?1 IS NULL OR created_at < ?1 OR (created_at = ?1 AND id < ?2))
ORDER BY created_at DESC, id DESC
LIMIT ?3
