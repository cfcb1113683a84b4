INSERT INTO _emdash_media_usage_reconciliations (collection_id, collection_slug, run_token)
VALUES (?1, ?2, ?3)
ON CONFLICT (collection_id) DO UPDATE SET
  collection_slug = excluded.collection_slug,
  run_token = excluded.run_token,
  phase = 'scan',
  scan_cursor = NULL,
  source_cursor = NULL,
  state = 'pending',
  next_attempt_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
  lease_token = NULL,
  lease_expires_at = NULL,
  updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
