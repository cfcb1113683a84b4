UPDATE _emdash_media_usage_index_status
SET status = 'failed',
    cursor = NULL,
    completed_at = NULL,
    last_error_code = 'MEDIA_USAGE_REPAIR_FAILED',
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE adapter_id = 'content-media' AND scope_type = 'collection' AND collection_id = ?1
  AND status = 'running' AND cursor = ?2
