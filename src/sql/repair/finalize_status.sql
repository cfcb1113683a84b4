UPDATE _emdash_media_usage_index_status
SET status = CASE
      WHEN EXISTS (SELECT 1 FROM _emdash_media_usage_work WHERE collection_id = ?1 AND state = 'failed'
                   -- (an entry over the admission limit whose media are known does not count)
                   AND unindexed_media IS NULL)
        OR EXISTS (SELECT 1 FROM _emdash_media_usage_sources WHERE collection_id = ?1 AND source_completeness = 'failed')
      THEN 'partial' ELSE 'complete' END,
    completed_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    reconciliation_required = 0,
    -- Every entry was re-projected under the run's rules.
    rules_version = coalesce((SELECT r.rules_version FROM _emdash_media_usage_reconciliations AS r
                              WHERE r.collection_id = ?1 AND r.run_token = ?2), rules_version),
    cursor = NULL,
    last_error_code = coalesce(
      (SELECT last_error_code FROM _emdash_media_usage_work
       WHERE collection_id = ?1 AND state = 'failed' ORDER BY updated_at DESC LIMIT 1),
      (SELECT last_error_code FROM _emdash_media_usage_sources
       WHERE collection_id = ?1 AND source_completeness = 'failed' ORDER BY updated_at DESC LIMIT 1)),
    -- Counted up to ?3 each, so that finalising reads a bounded number of rows whatever the
    -- collection holds (a count at the cap means at least that many).
    indexed_source_count = (SELECT count(*) FROM (SELECT 1 FROM _emdash_media_usage_sources
                            WHERE collection_id = ?1 AND source_completeness = 'complete' LIMIT ?3)),
    failed_source_count = (SELECT count(*) FROM (SELECT 1 FROM _emdash_media_usage_sources
                           WHERE collection_id = ?1 AND source_completeness = 'failed' LIMIT ?3)),
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE adapter_id = 'content-media' AND scope_type = 'collection' AND collection_id = ?1
  AND capture_state = 'active' AND status = 'running' AND cursor = ?2
  AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage_work WHERE collection_id = ?1 AND state <> 'failed')
  -- Entries projected before a field's deletion may still hold its occurrences until its walk
  -- has passed them.
  AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage_field_deletions
                  WHERE collection_id = ?1 AND phase = 'occurrences')
