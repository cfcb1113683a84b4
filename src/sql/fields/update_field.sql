UPDATE _emdash_fields
SET label = ?2, type = ?3, column_type = ?4, required = ?5, validation = ?6, options = ?7, sort_order = ?8,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE id = ?1
