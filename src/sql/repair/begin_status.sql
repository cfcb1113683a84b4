UPDATE _emdash_media_usage_index_status
SET status = 'running',
    cursor = (SELECT r.run_token FROM _emdash_media_usage_reconciliations AS r
              WHERE r.collection_id = _emdash_media_usage_index_status.collection_id),
    reconciliation_required = 1,
    started_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    completed_at = NULL,
    last_error_code = NULL,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE adapter_id = 'content-media' AND scope_type = 'collection' AND capture_state = 'active'
  AND collection_id IN (SELECT value FROM json_each(?1))
  AND EXISTS (SELECT 1 FROM _emdash_media_usage_reconciliations AS r
              WHERE r.collection_id = _emdash_media_usage_index_status.collection_id)
