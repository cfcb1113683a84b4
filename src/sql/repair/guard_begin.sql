INSERT INTO _emdash_batch_guard (id)
SELECT CASE WHEN
  EXISTS (SELECT 1 FROM _emdash_collections WHERE id = ?2 AND slug = ?3)
  AND EXISTS (SELECT 1 FROM _emdash_media_usage_index_status
              WHERE adapter_id = 'content-media' AND scope_type = 'collection'
                AND collection_id = ?2 AND scope_key = ?3 AND capture_state = 'active')
THEN ?1 END
