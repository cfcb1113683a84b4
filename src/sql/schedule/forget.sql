-- Drops the schedule index's row of entry ?2 (collection ?1) if it still holds the time ?3 (a
-- schedule made again meanwhile stays): its collection is gone, or its publish was refused.
DELETE FROM _emdash_content_schedule WHERE collection_id = ?1 AND content_id = ?2 AND scheduled_at = ?3
