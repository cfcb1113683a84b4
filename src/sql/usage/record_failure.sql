UPDATE _emdash_media_usage_index_status
SET status = CASE WHEN reconciliation_required = 0 THEN 'partial' ELSE status END,
    completed_at = CASE WHEN reconciliation_required = 0 THEN NULL ELSE completed_at END,
    last_error_code = ?4,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE adapter_id = 'content-media' AND scope_type = 'collection' AND collection_id = ?1
  AND EXISTS (SELECT 1 FROM _emdash_media_usage_work
              WHERE collection_id = ?1 AND content_id = ?2 AND work_version = ?3
                AND state = 'failed' AND last_error_code = ?4)
