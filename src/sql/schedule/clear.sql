-- Cancels the entry ?1's schedule: a published entry stays published, any other goes back to
-- `draft` (EmDash's rule). The batch's guard holds the preconditions.
UPDATE {table}
SET version = version + 1,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    status = CASE WHEN status = 'published' THEN 'published' ELSE 'draft' END,
    scheduled_at = NULL
WHERE id = ?1
RETURNING *
