DELETE FROM _emdash_api_tokens WHERE id = ?1
