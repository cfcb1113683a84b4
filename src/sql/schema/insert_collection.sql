INSERT INTO _emdash_collections (id, slug, label) VALUES (?1, ?2, ?3)
