DELETE FROM _emdash_media_usage_collection_deletions
WHERE collection_id = ?1 AND lease_token = ?2 AND phase = 'finalize'
  AND lease_expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
  -- Nothing of the collection may be left: not its table, registry row, queue, index, coverage,
  -- repair runs or revisions.
  AND NOT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'ec_' || collection_slug)
  AND NOT EXISTS (SELECT 1 FROM _emdash_collections WHERE id = ?1)
  AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage_work WHERE collection_id = ?1)
  AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage_sources WHERE source_type = 'content' AND collection_id = ?1)
  AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage WHERE source_key >= ?3 AND source_key < ?4)
  AND NOT EXISTS (SELECT 1 FROM revisions WHERE collection = collection_slug)
  AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage_index_status
                  WHERE adapter_id = 'content-media' AND scope_type = 'collection' AND collection_id = ?1)
  AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage_reconciliations WHERE collection_id = ?1)
