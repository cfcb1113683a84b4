-- Inserts a token; `?6` is its expiry (any ISO-8601 date-time, stored in the database clock's
-- format) and must lie in the future. Returns the row, or nothing when the expiry is not valid.
INSERT INTO _emdash_api_tokens (id, name, token_hash, role, scopes, expires_at)
SELECT ?1, ?2, ?3, ?4, ?5, strftime('%Y-%m-%dT%H:%M:%fZ', ?6)
WHERE ?6 IS NULL
   OR strftime('%Y-%m-%dT%H:%M:%fZ', ?6) > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
RETURNING id, name, role, scopes, created_at, last_used_at, expires_at
