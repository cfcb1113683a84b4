INSERT INTO _emdash_collections (id, slug, label, table_revision) VALUES (?1, ?2, ?3, ?4)
