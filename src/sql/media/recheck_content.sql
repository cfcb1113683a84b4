-- A media item registered by JSON may be one that existing content already links to (its
-- storage key is the client's): the coverage of every collection that has entries stops being
-- trusted until the ticks have re-projected them (an empty collection has nothing to re-check).
-- A run in progress is superseded (its token is cleared).
UPDATE _emdash_media_usage_index_status
SET rules_version = '',
    change_epoch = change_epoch + 1,
    completed_at = CASE WHEN status = 'complete' THEN NULL ELSE completed_at END,
    cursor = CASE WHEN status = 'running' THEN NULL ELSE cursor END,
    status = CASE WHEN status IN ('complete', 'running') THEN 'stale' ELSE status END,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE adapter_id = 'content-media' AND scope_type = 'collection' AND capture_state = 'active'
  AND (EXISTS (SELECT 1 FROM _emdash_media_usage_sources AS s WHERE s.collection_id = _emdash_media_usage_index_status.collection_id)
       OR EXISTS (SELECT 1 FROM _emdash_media_usage_work AS w WHERE w.collection_id = _emdash_media_usage_index_status.collection_id))
