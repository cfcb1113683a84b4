SELECT id FROM {table} WHERE slug = ?1 AND locale = ?2
