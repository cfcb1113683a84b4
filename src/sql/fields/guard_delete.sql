-- Deleting a field: the field ?2 is still the field ?4 of the collection ?3 (the one the request
-- read), and that collection's capture is active under its slug ?5 (content writes go through
-- its capture triggers, its coverage can be marked, and its table is `ec_` ?5; fail closed
-- otherwise).
INSERT INTO _emdash_batch_guard (id)
SELECT CASE WHEN
  EXISTS (SELECT 1 FROM _emdash_fields WHERE id = ?2 AND collection_id = ?3 AND slug = ?4)
  AND EXISTS (SELECT 1 FROM _emdash_media_usage_index_status
              WHERE adapter_id = 'content-media' AND scope_type = 'collection'
                AND collection_id = ?3 AND scope_key = ?5 AND capture_state = 'active')
THEN ?1 END
