UPDATE _emdash_media_usage_collection_deletions
SET state = 'leased',
    lease_token = ?2,
    lease_expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || ?3 || ' seconds'),
    attempt_count = attempt_count + 1,
    force_delete = max(force_delete, ?4),
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE collection_id = ?1 AND phase IN ('fence', 'registry', 'table')
  AND ((state IN ('pending', 'retry') AND next_attempt_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
       -- Only a leased row has an expiry (a CHECK constraint): an expired lease is due.
       OR lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
RETURNING *
