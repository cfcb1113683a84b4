CREATE INDEX {index} ON {table} (deleted_at, created_at, id)
