UPDATE _emdash_media_usage_index_status
SET capture_state = 'deleting',
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE adapter_id = 'content-media' AND scope_type = 'collection'
  AND collection_id = ?1 AND scope_key = ?4 AND capture_state = 'active'
  AND EXISTS (SELECT 1 FROM _emdash_collections WHERE id = ?1 AND slug = ?4)
  AND {lease}
  AND EXISTS (SELECT 1 FROM _emdash_media_usage_collection_deletions WHERE collection_id = ?1 AND collection_slug = ?4)
  AND (?5 = 1 OR NOT EXISTS (SELECT 1 FROM {table} WHERE deleted_at IS NULL))
RETURNING collection_id
