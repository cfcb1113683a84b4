UPDATE _emdash_media_usage_index_status
SET change_epoch = change_epoch + 1,
    completed_at = CASE WHEN status = 'complete' THEN NULL ELSE completed_at END,
    status = CASE WHEN status = 'complete' THEN 'stale' ELSE status END,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE adapter_id = 'content-media' AND scope_type = 'collection' AND collection_id = ?1
