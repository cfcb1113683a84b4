-- The earliest due schedule after (?2, ?3, ?4) in due order (NULL: from the earliest): a time at
-- or before the tick's time ?1 (NULL: the database clock's; never earlier than the database
-- clock), searched on the due index from the cursor. With nothing due it reads no row, however
-- many schedules lie ahead.
SELECT collection_id, collection_slug, content_id, scheduled_at
FROM _emdash_content_schedule
WHERE scheduled_at <= max(coalesce(?1, ''), strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
  AND (scheduled_at, collection_id, content_id) > (coalesce(?2, ''), coalesce(?3, ''), coalesce(?4, ''))
ORDER BY scheduled_at, collection_id, content_id
LIMIT 1
