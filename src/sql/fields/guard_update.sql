-- Updating a field: the collection ?2 is still registered as ?3, its field ?4 is still exactly as
-- the request read it (slug ?5, label ?6, type ?7, required ?8, validation ?9, options ?10, sort
-- order ?11: a concurrent change is a conflict, never overwritten), and the collection's capture
-- is active (its coverage can be marked; fail closed otherwise).
INSERT INTO _emdash_batch_guard (id)
SELECT CASE WHEN
  EXISTS (SELECT 1 FROM _emdash_collections WHERE id = ?2 AND slug = ?3)
  AND EXISTS (SELECT 1 FROM _emdash_fields
              WHERE id = ?4 AND collection_id = ?2 AND slug = ?5 AND label = ?6 AND type = ?7
                AND required = ?8 AND validation IS ?9 AND options IS ?10 AND sort_order = ?11)
  AND EXISTS (SELECT 1 FROM _emdash_media_usage_index_status
              WHERE adapter_id = 'content-media' AND scope_type = 'collection'
                AND collection_id = ?2 AND scope_key = ?3 AND capture_state = 'active')
THEN ?1 END
