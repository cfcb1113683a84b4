-- A new tombstone for the collection ?3 (slug ?4, force ?5, cleanup batch ?6), born claimed:
-- leased at `fence` under the token ?1 for ?2 seconds, its first attempt counted.
INSERT INTO _emdash_media_usage_collection_deletions
  (collection_id, collection_slug, force_delete, state, phase, attempt_count, lease_token, lease_expires_at,
   cleanup_batch_rows)
SELECT ?3, ?4, ?5, 'leased', 'fence', 1, ?1, strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || ?2 || ' seconds'), ?6
WHERE EXISTS (SELECT 1 FROM _emdash_collections WHERE id = ?3 AND slug = ?4)
  -- Fail closed: only a collection whose capture is active, with its exact trigger set, can be
  -- fenced (otherwise a write could slip past the fence unqueued).
  AND EXISTS (SELECT 1 FROM _emdash_media_usage_index_status
              WHERE adapter_id = 'content-media' AND scope_type = 'collection'
                AND collection_id = ?3 AND scope_key = ?4 AND capture_state = 'active')
  AND (SELECT count(*) FROM sqlite_master
       WHERE tbl_name = 'ec_' || ?4 AND name IN (?7, ?8, ?9)) = 3
ON CONFLICT DO NOTHING
RETURNING *
