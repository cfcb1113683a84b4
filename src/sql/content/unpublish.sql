UPDATE {table}
SET version = version + 1,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    status = 'draft'
WHERE id = ?1 AND status <> 'draft'
RETURNING *
