UPDATE {table}
SET version = version + 1,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    draft_revision_id = ?2
WHERE id = ?1
RETURNING *
