-- Token lifecycle: an optional expiry, and when the token was last used (written at most once a
-- minute per token). Revoking a token deletes its row.
ALTER TABLE _emdash_api_tokens ADD COLUMN expires_at TEXT;
ALTER TABLE _emdash_api_tokens ADD COLUMN last_used_at TEXT;

CREATE INDEX idx__emdash_api_tokens_list ON _emdash_api_tokens (created_at, id);
