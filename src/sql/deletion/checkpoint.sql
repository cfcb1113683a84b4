UPDATE _emdash_media_usage_collection_deletions
SET phase = ?4,
    cleanup_batch_rows = ?5,
    cleanup_rows_kind = ?9,
    -- Progress: the attempt under way (the claim counted it) is the only one; a release ends it.
    attempt_count = CASE WHEN ?6 = 1 THEN 0 ELSE 1 END,
    last_error_code = NULL,
    -- With ?6 = 1 the holder releases it, due now.
    {release},
    next_attempt_at = CASE WHEN ?6 = 1 THEN strftime('%Y-%m-%dT%H:%M:%fZ', 'now') ELSE next_attempt_at END
WHERE collection_id = ?1 AND lease_token = ?2 AND phase = ?3
  AND lease_expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
  -- A phase is left only once what it removes is gone.
  AND (?4 = ?3 OR CASE ?3
    WHEN 'fence' THEN EXISTS (SELECT 1 FROM _emdash_media_usage_index_status
                              WHERE adapter_id = 'content-media' AND scope_type = 'collection'
                                AND collection_id = ?1 AND capture_state = 'deleting')
    WHEN 'registry' THEN NOT EXISTS (SELECT 1 FROM _emdash_collections WHERE id = ?1)
    WHEN 'table' THEN NOT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'ec_' || collection_slug)
    WHEN 'work' THEN NOT EXISTS (SELECT 1 FROM _emdash_media_usage_work WHERE collection_id = ?1)
                 AND NOT EXISTS (SELECT 1 FROM revisions WHERE collection = collection_slug)
    WHEN 'sources' THEN NOT EXISTS (SELECT 1 FROM _emdash_media_usage_sources
                                    WHERE source_type = 'content' AND collection_id = ?1)
                    AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage WHERE source_key >= ?7 AND source_key < ?8)
    WHEN 'status' THEN NOT EXISTS (SELECT 1 FROM _emdash_media_usage_index_status
                                   WHERE adapter_id = 'content-media' AND scope_type = 'collection'
                                     AND collection_id = ?1)
                   AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage_reconciliations WHERE collection_id = ?1)
    ELSE 1 END)
