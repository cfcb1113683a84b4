INSERT INTO _emdash_api_tokens (id, name, token_hash, role, scopes) VALUES (?1, ?2, ?3, ?4, ?5)
