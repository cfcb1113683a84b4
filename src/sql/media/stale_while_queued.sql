-- Coverage is not complete while an entry of the collection waits in the queue: a collection
-- marked complete that has pending work (just queued by the statement before, in the same batch)
-- reads stale until that work has run. One probe of the work index per collection.
UPDATE _emdash_media_usage_index_status
SET change_epoch = change_epoch + 1,
    completed_at = NULL,
    status = 'stale',
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE adapter_id = 'content-media' AND scope_type = 'collection' AND status = 'complete'
  AND EXISTS (SELECT 1 FROM _emdash_media_usage_work AS w
              WHERE w.collection_id = _emdash_media_usage_index_status.collection_id AND w.state = 'pending')
