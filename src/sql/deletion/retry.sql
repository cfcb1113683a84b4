UPDATE _emdash_media_usage_collection_deletions
SET state = 'pending',
    attempt_count = 0,
    next_attempt_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    lease_token = NULL,
    lease_expires_at = NULL,
    last_error_code = NULL,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE collection_id = ?1
  -- Only a leased row has an expiry (a CHECK constraint).
  AND (state IN ('failed', 'retry') OR lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
RETURNING *
