SELECT id, role, scopes, token_hash FROM _emdash_api_tokens WHERE token_hash = ?1
