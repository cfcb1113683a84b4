SELECT id FROM {table} WHERE id > coalesce(?1, '') ORDER BY id LIMIT ?2
