UPDATE _emdash_media_usage_collection_deletions
SET state = 'leased',
    lease_token = ?1,
    lease_expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || ?2 || ' seconds'),
    attempt_count = attempt_count + 1,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE rowid = (
  SELECT rid FROM (
    SELECT * FROM (
      SELECT rowid AS rid, next_attempt_at AS due, updated_at, collection_id
      FROM _emdash_media_usage_collection_deletions
      WHERE state = 'pending' AND next_attempt_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
      ORDER BY next_attempt_at, updated_at, collection_id LIMIT 1)
    UNION ALL
    SELECT * FROM (
      SELECT rowid AS rid, next_attempt_at AS due, updated_at, collection_id
      FROM _emdash_media_usage_collection_deletions
      WHERE state = 'retry' AND next_attempt_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
      ORDER BY next_attempt_at, updated_at, collection_id LIMIT 1)
    UNION ALL
    SELECT * FROM (
      SELECT rowid AS rid, lease_expires_at AS due, updated_at, collection_id
      FROM _emdash_media_usage_collection_deletions
      -- (Only a leased row has an expiry; `state` selects the lease index.)
      WHERE state = 'leased' AND lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
      ORDER BY lease_expires_at, updated_at, collection_id LIMIT 1)
  )
  ORDER BY due, updated_at, collection_id
  LIMIT 1
)
RETURNING *
