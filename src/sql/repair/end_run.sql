DELETE FROM _emdash_media_usage_reconciliations
WHERE collection_id = ?1 AND lease_token = ?2 AND state = 'leased'
  AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage_index_status
                  WHERE adapter_id = 'content-media' AND scope_type = 'collection'
                    AND collection_id = ?1 AND status = 'running' AND cursor = ?3)
