INSERT INTO _emdash_batch_guard (id)
SELECT CASE WHEN
  EXISTS (SELECT 1 FROM _emdash_media_usage_index_status
          WHERE adapter_id = 'content-media' AND scope_type = 'collection'
            AND collection_id = ?2 AND scope_key = ?3 AND capture_state = 'active')
  AND EXISTS (SELECT 1 FROM _emdash_collections WHERE id = ?2 AND slug = ?3)
  AND ((?5 IS NULL AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage_work WHERE collection_id = ?2 AND content_id = ?4))
       OR EXISTS (SELECT 1 FROM _emdash_media_usage_work
                  WHERE collection_id = ?2 AND content_id = ?4 AND work_version = ?5 AND state = ?6
                    AND (state <> 'leased' OR lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))))
THEN ?1 END
