DELETE FROM _emdash_media_usage_index_status
WHERE adapter_id = 'content-media' AND scope_type = 'collection' AND collection_id = ?1
  AND {lease}
