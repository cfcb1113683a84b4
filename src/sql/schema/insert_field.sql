INSERT INTO _emdash_fields (id, collection_id, slug, label, type, column_type, required, validation, sort_order)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
