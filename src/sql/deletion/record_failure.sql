UPDATE _emdash_media_usage_collection_deletions
SET state = CASE WHEN ?3 = 1 THEN 'failed' ELSE 'retry' END,
    next_attempt_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || ?4 || ' seconds'),
    lease_token = NULL,
    lease_expires_at = NULL,
    last_error_code = ?5,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE collection_id = ?1 AND lease_token = ?2 AND lease_expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
