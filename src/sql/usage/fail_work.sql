UPDATE _emdash_media_usage_work
SET state = CASE WHEN ?5 = 1 THEN 'failed' ELSE 'retry' END,
    next_attempt_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || ?6 || ' seconds'),
    lease_token = NULL,
    lease_expires_at = NULL,
    last_error_code = ?7,
    -- The media an entry over the admission limit references (JSON ids), else NULL.
    unindexed_media = ?8,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE collection_id = ?1 AND content_id = ?2 AND lease_token = ?3 AND work_version = ?4 AND state = 'leased'
