UPDATE _emdash_media_usage_work
SET state = 'leased',
    lease_token = ?1,
    lease_expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+60 seconds'),
    attempt_count = attempt_count + 1,
    last_attempted_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE collection_id = ?2 AND content_id = ?3
  AND ((state IN ('pending', 'retry') AND next_attempt_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
       OR (state = 'leased' AND lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))
RETURNING *
