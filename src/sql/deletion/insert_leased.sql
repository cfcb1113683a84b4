INSERT INTO _emdash_media_usage_collection_deletions
  (collection_id, collection_slug, force_delete, state, phase, attempt_count, lease_token, lease_expires_at,
   cleanup_batch_rows)
SELECT ?1, ?2, ?3, 'leased', 'fence', 1, ?4, strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || ?5 || ' seconds'), ?6
WHERE EXISTS (SELECT 1 FROM _emdash_collections WHERE id = ?1 AND slug = ?2)
  -- Fail closed: only a collection whose capture is active, with its exact trigger set, can be
  -- fenced (otherwise a write could slip past the fence unqueued).
  AND EXISTS (SELECT 1 FROM _emdash_media_usage_index_status
              WHERE adapter_id = 'content-media' AND scope_type = 'collection'
                AND collection_id = ?1 AND scope_key = ?2 AND capture_state = 'active')
  AND (SELECT count(*) FROM sqlite_master
       WHERE tbl_name = 'ec_' || ?2 AND name IN (?7, ?8, ?9)) = 3
ON CONFLICT DO NOTHING
RETURNING *
