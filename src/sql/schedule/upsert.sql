-- Makes the schedule index's row of entry ?2 (collection ?1, slug ?3) hold the entry's schedule,
-- when it has one. Run in the batch of a write that leaves the entry outside the trash (a
-- schedule, a restore).
INSERT INTO _emdash_content_schedule (collection_id, content_id, collection_slug, scheduled_at)
SELECT ?1, id, ?3, scheduled_at FROM {table} WHERE id = ?2 AND scheduled_at IS NOT NULL
ON CONFLICT (collection_id, content_id) DO UPDATE
SET scheduled_at = excluded.scheduled_at, collection_slug = excluded.collection_slug
