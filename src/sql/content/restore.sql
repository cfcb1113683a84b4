UPDATE {table}
SET version = version + 1,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    deleted_at = NULL
WHERE id = ?1 AND deleted_at IS NOT NULL
RETURNING *
