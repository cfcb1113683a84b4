-- Token lineage: who minted each token — the minter's token id, or 'bootstrap' for the
-- `EMDASH_ADMIN_TOKEN` secret (NULL for tokens minted before this migration). A cascade revoke
-- walks this column from a token to everything minted from it, so it is indexed.
ALTER TABLE _emdash_api_tokens ADD COLUMN created_by TEXT;
CREATE INDEX idx__emdash_api_tokens_created_by ON _emdash_api_tokens (created_by);
