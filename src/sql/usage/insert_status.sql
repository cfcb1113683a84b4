INSERT INTO _emdash_media_usage_index_status
  (adapter_id, scope_type, scope_key, status, collection_id, capture_state, completed_at, rules_version)
VALUES ('content-media', 'collection', ?1, 'complete', ?2, 'active', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), ?3)
