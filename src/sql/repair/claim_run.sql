-- Claims the next due run (or, with ?2, that collection's run if it is due) with a 60 s lease.
UPDATE _emdash_media_usage_reconciliations
SET state = 'leased',
    lease_token = ?1,
    lease_expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+60 seconds'),
    attempt_count = attempt_count + 1,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE rowid = (
  SELECT rid FROM (
    SELECT * FROM (
      SELECT rowid AS rid, next_attempt_at AS due, collection_id FROM _emdash_media_usage_reconciliations
      WHERE state = 'pending' AND next_attempt_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
        AND (?2 IS NULL OR collection_id = ?2)
      ORDER BY next_attempt_at, collection_id LIMIT 1)
    UNION ALL
    SELECT * FROM (
      SELECT rowid AS rid, lease_expires_at AS due, collection_id FROM _emdash_media_usage_reconciliations
      WHERE state = 'leased' AND lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
        AND (?2 IS NULL OR collection_id = ?2)
      ORDER BY lease_expires_at, collection_id LIMIT 1)
  )
  ORDER BY due, collection_id
  LIMIT 1
)
RETURNING *
