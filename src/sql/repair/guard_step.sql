INSERT INTO _emdash_batch_guard (id)
SELECT CASE WHEN
  EXISTS (SELECT 1 FROM _emdash_media_usage_reconciliations
          WHERE collection_id = ?2 AND run_token = ?3 AND lease_token = ?4 AND state = 'leased'
            AND lease_expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
  AND EXISTS (SELECT 1 FROM _emdash_collections WHERE id = ?2 AND slug = ?5)
  AND EXISTS (SELECT 1 FROM _emdash_media_usage_index_status
              WHERE adapter_id = 'content-media' AND scope_type = 'collection'
                AND collection_id = ?2 AND status = 'running' AND cursor = ?3)
THEN ?1 END
