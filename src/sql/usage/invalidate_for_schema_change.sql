UPDATE _emdash_media_usage_index_status
SET change_epoch = change_epoch + 1,
    status = CASE WHEN EXISTS (SELECT 1 FROM {table}) THEN 'stale' ELSE status END,
    reconciliation_required = CASE WHEN EXISTS (SELECT 1 FROM {table}) THEN 1 ELSE reconciliation_required END,
    last_error_code = CASE WHEN EXISTS (SELECT 1 FROM {table}) THEN 'CONTENT_USAGE_STALE' ELSE last_error_code END,
    completed_at = CASE WHEN EXISTS (SELECT 1 FROM {table}) THEN NULL ELSE completed_at END,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE adapter_id = 'content-media' AND scope_type = 'collection'
  AND collection_id = ?1 AND scope_key = ?2 AND capture_state = 'active'
