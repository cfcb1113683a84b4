-- A live token by its hash (an expired one is not found), and whether its `last_used_at` is
-- more than ?2 seconds old (the caller then records this use).
SELECT id, role, scopes, token_hash,
       (last_used_at IS NULL OR last_used_at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || ?2 || ' seconds')) AS touch
FROM _emdash_api_tokens
WHERE token_hash = ?1
  AND (expires_at IS NULL OR expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
