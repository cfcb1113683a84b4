-- Newest first, after the cursor (?1, ?2) (NULL: from the newest; `~` sorts after any timestamp
-- and id): a row-value range, so the index is searched from the cursor, not scanned to it.
SELECT id, name, role, scopes, created_at, last_used_at, expires_at, created_by
FROM _emdash_api_tokens
WHERE (created_at, id) < (coalesce(?1, '~'), coalesce(?2, '~'))
ORDER BY created_at DESC, id DESC
LIMIT ?3
