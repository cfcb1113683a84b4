-- Updating a field: the field ?2 of the collection ?3 is still exactly as the request read it
-- (slug ?4, label ?5, type ?6, required ?7, validation ?8, options ?9, sort order ?10: a
-- concurrent change is a conflict, never overwritten), and the collection's capture is active
-- under its slug ?11 (its coverage can be marked; fail closed otherwise).
INSERT INTO _emdash_batch_guard (id)
SELECT CASE WHEN
  EXISTS (SELECT 1 FROM _emdash_fields
          WHERE id = ?2 AND collection_id = ?3 AND slug = ?4 AND label = ?5 AND type = ?6
            AND required = ?7 AND validation IS ?8 AND options IS ?9 AND sort_order = ?10)
  AND EXISTS (SELECT 1 FROM _emdash_media_usage_index_status
              WHERE adapter_id = 'content-media' AND scope_type = 'collection'
                AND collection_id = ?3 AND scope_key = ?11 AND capture_state = 'active')
THEN ?1 END
