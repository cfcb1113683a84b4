-- Takes over the tombstone of ?3 at a front phase under the token ?1 for ?2 seconds, when it is
-- due or its lease expired, raising its force flag to ?4.
UPDATE _emdash_media_usage_collection_deletions
SET {set_leased},
    force_delete = max(force_delete, ?4)
WHERE collection_id = ?3 AND phase IN ('fence', 'registry', 'table')
  AND ((state IN ('pending', 'retry') AND next_attempt_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
       -- Only a leased row has an expiry (a CHECK constraint): an expired lease is due.
       OR lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
RETURNING *
