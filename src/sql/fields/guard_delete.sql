-- Deleting a field: the collection ?2 is still registered as ?3, the field ?4 is still its field
-- ?5 (the one the request read), and the collection's capture is active (content writes go
-- through its capture triggers, and its coverage can be marked; fail closed otherwise).
INSERT INTO _emdash_batch_guard (id)
SELECT CASE WHEN
  EXISTS (SELECT 1 FROM _emdash_collections WHERE id = ?2 AND slug = ?3)
  AND EXISTS (SELECT 1 FROM _emdash_fields WHERE id = ?4 AND collection_id = ?2 AND slug = ?5)
  AND EXISTS (SELECT 1 FROM _emdash_media_usage_index_status
              WHERE adapter_id = 'content-media' AND scope_type = 'collection'
                AND collection_id = ?2 AND scope_key = ?3 AND capture_state = 'active')
THEN ?1 END
