SELECT {name} AS collection, count(*) AS n FROM {table} WHERE status = 'published' AND deleted_at IS NULL
