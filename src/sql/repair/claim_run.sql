-- Claims the next due run (or, with ?3, that collection's run if it is due) under the token ?1
-- for ?2 seconds.
UPDATE _emdash_media_usage_reconciliations
SET {set_leased}
WHERE rowid = (
  SELECT rid FROM (
    SELECT * FROM (
      SELECT rowid AS rid, next_attempt_at AS due, collection_id FROM _emdash_media_usage_reconciliations
      WHERE state = 'pending' AND next_attempt_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
        AND (?3 IS NULL OR collection_id = ?3)
      ORDER BY next_attempt_at, collection_id LIMIT 1)
    UNION ALL
    SELECT * FROM (
      SELECT rowid AS rid, lease_expires_at AS due, collection_id FROM _emdash_media_usage_reconciliations
      WHERE state = 'leased' AND lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
        AND (?3 IS NULL OR collection_id = ?3)
      ORDER BY lease_expires_at, collection_id LIMIT 1)
  )
  ORDER BY due, collection_id
  LIMIT 1
)
RETURNING *
