SELECT EXISTS (SELECT 1 FROM {table} WHERE deleted_at IS NULL) AS has_content
