-- Claims the work row of one entry (?3 collection, ?4 entry) under the token ?1 for ?2 seconds,
-- when it is due or its lease expired (its holder died).
UPDATE _emdash_media_usage_work
SET {set_leased},
    last_attempted_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE collection_id = ?3 AND content_id = ?4
  AND ((state IN ('pending', 'retry') AND next_attempt_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
       OR (state = 'leased' AND lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))
RETURNING *
