-- Claims the relink in progress that is due the longest (queued, or its lease expired) under
-- the token ?1 for ?2 seconds.
UPDATE _emdash_media_relinks
SET {set_leased}
WHERE rowid = (
  SELECT rid FROM (
    SELECT * FROM (
      SELECT rowid AS rid, next_attempt_at AS due, id FROM _emdash_media_relinks
      WHERE finished_at IS NULL AND state = 'pending'
        AND next_attempt_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
      ORDER BY next_attempt_at, id LIMIT 1)
    UNION ALL
    SELECT * FROM (
      SELECT rowid AS rid, lease_expires_at AS due, id FROM _emdash_media_relinks
      WHERE finished_at IS NULL AND state = 'leased'
        AND lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
      ORDER BY lease_expires_at, id LIMIT 1)
  )
  ORDER BY due, id
  LIMIT 1
)
RETURNING *
