-- Schedules the entry ?1 for ?2 (in the database clock's form): a published entry stays
-- published (the schedule publishes its draft), any other becomes `scheduled` (EmDash's rule).
-- The batch's guard holds the preconditions.
UPDATE {table}
SET version = version + 1,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    status = CASE WHEN status = 'published' THEN 'published' ELSE 'scheduled' END,
    scheduled_at = ?2
WHERE id = ?1
RETURNING *
