-- Drops the schedule index's row of entry ?2 (collection ?1) unless the entry, outside the
-- trash, still has exactly that schedule: it was published, unscheduled, trashed or deleted.
DELETE FROM _emdash_content_schedule
WHERE collection_id = ?1 AND content_id = ?2
  AND NOT EXISTS (SELECT 1 FROM {table} AS e
                  WHERE e.id = ?2 AND e.scheduled_at = _emdash_content_schedule.scheduled_at
                    AND e.deleted_at IS NULL)
