SELECT * FROM {table}
WHERE deleted_at IS NULL
  AND (?1 IS NULL OR status = ?1)
  AND (?2 IS NULL OR locale = ?2)
  AND (?3 IS NULL OR created_at < ?3 OR (created_at = ?3 AND id < ?4))
ORDER BY created_at DESC, id DESC
LIMIT ?5
