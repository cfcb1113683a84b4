UPDATE _emdash_media_usage_index_status
SET last_incremental_success_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    status = CASE
      WHEN ?2 IS NOT NULL AND reconciliation_required = 0 THEN 'partial'
      WHEN reconciliation_required = 0 AND status IN ('complete', 'stale', 'partial')
           AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage_work WHERE collection_id = ?1
                           -- (an entry over the admission limit whose media are known does not count)
                           AND (state <> 'failed' OR unindexed_media IS NULL))
           AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage_sources
                           WHERE collection_id = ?1 AND source_completeness = 'failed')
           -- (nor while a deleted field's occurrences are still being removed)
           AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage_field_deletions
                           WHERE collection_id = ?1 AND phase = 'occurrences')
        THEN 'complete'
      ELSE status END,
    completed_at = CASE
      WHEN ?2 IS NULL AND reconciliation_required = 0 AND status IN ('complete', 'stale', 'partial')
           AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage_work WHERE collection_id = ?1
                           -- (an entry over the admission limit whose media are known does not count)
                           AND (state <> 'failed' OR unindexed_media IS NULL))
           AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage_sources
                           WHERE collection_id = ?1 AND source_completeness = 'failed')
           -- (nor while a deleted field's occurrences are still being removed)
           AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage_field_deletions
                           WHERE collection_id = ?1 AND phase = 'occurrences')
        THEN strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
      ELSE completed_at END,
    last_error_code = CASE
      WHEN ?2 IS NOT NULL THEN ?2
      WHEN reconciliation_required = 0
           AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage_work WHERE collection_id = ?1
                           -- (an entry over the admission limit whose media are known does not count)
                           AND (state <> 'failed' OR unindexed_media IS NULL))
           AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage_sources
                           WHERE collection_id = ?1 AND source_completeness = 'failed')
           -- (nor while a deleted field's occurrences are still being removed)
           AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage_field_deletions
                           WHERE collection_id = ?1 AND phase = 'occurrences')
        THEN NULL
      ELSE last_error_code END
WHERE adapter_id = 'content-media' AND scope_type = 'collection' AND collection_id = ?1
  AND capture_state = 'active'
