-- Claims work under one lease token ?1: up to ?2 fresh due rows (pending, never attempted) of
-- one collection — the collection of the earliest such row — for a group job; or, when no fresh
-- row is due, the one row a single job would claim (a retry that is due, or a lease that
-- expired). Rows that were attempted before go through single jobs, which record failures.
UPDATE _emdash_media_usage_work
SET state = 'leased',
    lease_token = ?1,
    lease_expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+60 seconds'),
    attempt_count = attempt_count + 1,
    last_attempted_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE rowid IN (
  SELECT * FROM (
    SELECT w.rowid FROM _emdash_media_usage_work AS w
    WHERE w.state = 'pending' AND w.attempt_count = 0
      AND w.next_attempt_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
      AND w.collection_id = (
        SELECT collection_id FROM _emdash_media_usage_work
        WHERE state = 'pending' AND attempt_count = 0
          AND next_attempt_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
        ORDER BY next_attempt_at, updated_at, collection_id, content_id
        LIMIT 1)
    ORDER BY w.next_attempt_at, w.updated_at, w.content_id
    LIMIT ?2)
  UNION ALL
  SELECT rid FROM (
    SELECT * FROM (
      SELECT rowid AS rid, next_attempt_at AS due, updated_at, collection_id, content_id
      FROM _emdash_media_usage_work
      WHERE state IN ('pending', 'retry') AND next_attempt_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
      ORDER BY next_attempt_at, updated_at, collection_id, content_id LIMIT 1)
    UNION ALL
    SELECT * FROM (
      SELECT rowid AS rid, lease_expires_at AS due, updated_at, collection_id, content_id
      FROM _emdash_media_usage_work
      WHERE state = 'leased' AND lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
      ORDER BY lease_expires_at, updated_at, collection_id, content_id LIMIT 1)
    ORDER BY due, updated_at, collection_id, content_id
    LIMIT 1)
  WHERE NOT EXISTS (
    SELECT 1 FROM _emdash_media_usage_work
    WHERE state = 'pending' AND attempt_count = 0
      AND next_attempt_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))
RETURNING *
