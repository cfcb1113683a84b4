-- Adding a field: the collection identity still exists, the field slug is free, the collection
-- has fewer than ?5 fields (counted here, so concurrent adds cannot pass the limit), and its
-- capture is active (coverage can be invalidated; fail closed otherwise).
INSERT INTO _emdash_batch_guard (id)
SELECT CASE
  WHEN EXISTS (SELECT 1 FROM _emdash_collections WHERE id = ?2 AND slug = ?3)
   AND NOT EXISTS (SELECT 1 FROM _emdash_fields WHERE collection_id = ?2 AND slug = ?4)
   AND (SELECT count(*) FROM _emdash_fields WHERE collection_id = ?2) < ?5
   AND EXISTS (SELECT 1 FROM _emdash_media_usage_index_status
               WHERE adapter_id = 'content-media' AND scope_type = 'collection'
                 AND collection_id = ?2 AND scope_key = ?3 AND capture_state = 'active')
  THEN ?1
END
