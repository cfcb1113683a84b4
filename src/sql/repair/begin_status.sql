UPDATE _emdash_media_usage_index_status
SET status = 'running',
    cursor = ?2,
    reconciliation_required = 1,
    started_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    completed_at = NULL,
    last_error_code = NULL,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE adapter_id = 'content-media' AND scope_type = 'collection' AND collection_id = ?1
  AND capture_state = 'active'
