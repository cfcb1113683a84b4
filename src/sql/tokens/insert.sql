-- Mints a token, one statement whose WHERE holds every precondition. `?7` is the minter's token
-- id, NULL for the bootstrap token; `?8` is what `created_by` records ('bootstrap' or `?7`).
-- A stored minter must still exist and be live when the row goes in, so a concurrent revoke (or
-- expiry) of the minter leaves no orphan child. `?6` is the requested expiry (any ISO-8601
-- date-time, stored in the database clock's format; it must lie in the future); a stored
-- minter's own expiry, read from its row here, is the default and the cap, so a token never
-- outlives its minter. The bootstrap token is uncapped. Returns the row, or nothing when a
-- precondition fails (`expiry_is_future.sql` tells which).
INSERT INTO _emdash_api_tokens (id, name, token_hash, role, scopes, expires_at, created_by)
SELECT ?1, ?2, ?3, ?4, ?5,
       CASE
         WHEN minter.expires_at IS NULL THEN asked.expires_at
         WHEN asked.expires_at IS NULL OR asked.expires_at > minter.expires_at THEN minter.expires_at
         ELSE asked.expires_at
       END,
       ?8
FROM (SELECT strftime('%Y-%m-%dT%H:%M:%fZ', ?6) AS expires_at) AS asked
LEFT JOIN _emdash_api_tokens AS minter ON minter.id = ?7
WHERE (?6 IS NULL OR asked.expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
  AND (?7 IS NULL
       OR (minter.id IS NOT NULL
           AND (minter.expires_at IS NULL OR minter.expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))))
RETURNING id, name, role, scopes, created_at, last_used_at, expires_at, created_by
