UPDATE _emdash_media_usage_work
SET state = 'leased',
    lease_token = ?1,
    lease_expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+60 seconds'),
    attempt_count = attempt_count + 1,
    last_attempted_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE rowid = (
  SELECT rid FROM (
    SELECT * FROM (
      SELECT rowid AS rid, next_attempt_at AS due, updated_at, collection_id, content_id
      FROM _emdash_media_usage_work
      WHERE state = 'pending' AND next_attempt_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
      ORDER BY next_attempt_at, updated_at, collection_id, content_id LIMIT 1)
    UNION ALL
    SELECT * FROM (
      SELECT rowid AS rid, next_attempt_at AS due, updated_at, collection_id, content_id
      FROM _emdash_media_usage_work
      WHERE state = 'retry' AND next_attempt_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
      ORDER BY next_attempt_at, updated_at, collection_id, content_id LIMIT 1)
    UNION ALL
    SELECT * FROM (
      SELECT rowid AS rid, lease_expires_at AS due, updated_at, collection_id, content_id
      FROM _emdash_media_usage_work
      WHERE state = 'leased' AND lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
      ORDER BY lease_expires_at, updated_at, collection_id, content_id LIMIT 1)
  )
  ORDER BY due, updated_at, collection_id, content_id
  LIMIT 1
)
RETURNING *
