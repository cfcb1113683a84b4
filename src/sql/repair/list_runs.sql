-- Repair runs in progress, oldest first (at most ?1).
SELECT collection_id, collection_slug, phase, scan_cursor, state, attempt_count, next_attempt_at
FROM _emdash_media_usage_reconciliations
ORDER BY created_at, collection_id
LIMIT ?1
