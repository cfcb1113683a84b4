DELETE FROM _emdash_collections
WHERE id = ?1 AND slug = ?4
  AND {lease}
  -- The registry row goes only once content writes to the collection are fenced.
  AND EXISTS (SELECT 1 FROM _emdash_media_usage_index_status
              WHERE adapter_id = 'content-media' AND scope_type = 'collection'
                AND collection_id = ?1 AND capture_state = 'deleting')
