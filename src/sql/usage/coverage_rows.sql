SELECT c.id AS collection_id, c.slug AS collection, s.status, s.capture_state,
       s.change_epoch, s.reconciliation_required, s.last_error_code, s.schema_version, s.rules_version,
       s.indexed_source_count, s.failed_source_count, s.started_at, s.completed_at
FROM _emdash_collections AS c
LEFT JOIN _emdash_media_usage_index_status AS s
  ON s.adapter_id = 'content-media' AND s.scope_type = 'collection'
 AND s.collection_id = c.id AND s.scope_key = c.slug
ORDER BY c.slug
