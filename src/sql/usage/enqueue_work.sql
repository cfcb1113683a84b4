INSERT INTO _emdash_media_usage_work (collection_id, content_id, collection_slug, change_epoch)
SELECT ?1, i.value, ?2,
       (SELECT change_epoch FROM _emdash_media_usage_index_status
        WHERE adapter_id = 'content-media' AND scope_type = 'collection' AND collection_id = ?1)
FROM json_each(?3) AS i
WHERE true
ON CONFLICT (collection_id, content_id) DO UPDATE SET
  work_version = work_version + 1,
  change_epoch = excluded.change_epoch,
  state = 'pending',
  attempt_count = 0,
  next_attempt_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
  lease_token = NULL,
  lease_expires_at = NULL,
  last_error_code = NULL,
  updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
