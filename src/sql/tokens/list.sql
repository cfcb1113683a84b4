SELECT id, name, role, scopes, created_at, last_used_at, expires_at, created_by
FROM _emdash_api_tokens
WHERE (?1 IS NULL OR created_at < ?1 OR (created_at = ?1 AND id < ?2))
ORDER BY created_at DESC, id DESC
LIMIT ?3
