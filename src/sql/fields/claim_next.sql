-- Claims the next due field deletion (pending or retry and due, or leased with an expired lease)
-- under the token ?1 for ?2 seconds.
UPDATE _emdash_media_usage_field_deletions
SET {set_leased}
WHERE rowid = (
  SELECT rid FROM (
    SELECT * FROM (
      SELECT rowid AS rid, next_attempt_at AS due, updated_at, field_id
      FROM _emdash_media_usage_field_deletions
      WHERE state = 'pending' AND next_attempt_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
      ORDER BY next_attempt_at, updated_at, field_id LIMIT 1)
    UNION ALL
    SELECT * FROM (
      SELECT rowid AS rid, next_attempt_at AS due, updated_at, field_id
      FROM _emdash_media_usage_field_deletions
      WHERE state = 'retry' AND next_attempt_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
      ORDER BY next_attempt_at, updated_at, field_id LIMIT 1)
    UNION ALL
    SELECT * FROM (
      SELECT rowid AS rid, lease_expires_at AS due, updated_at, field_id
      FROM _emdash_media_usage_field_deletions
      -- (Only a leased row has an expiry; `state` selects the lease index.)
      WHERE state = 'leased' AND lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
      ORDER BY lease_expires_at, updated_at, field_id LIMIT 1)
  )
  ORDER BY due, updated_at, field_id
  LIMIT 1
)
RETURNING *
