UPDATE _emdash_media_usage_reconciliations
SET phase = ?3,
    scan_cursor = ?4,
    source_cursor = ?5,
    {release},
    attempt_count = CASE WHEN ?7 = 1 THEN 0 ELSE attempt_count END,
    next_attempt_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || ?6 || ' seconds')
WHERE collection_id = ?1 AND lease_token = ?2 AND state = 'leased'
