-- A field deletion's walk ended: the collection ?1's coverage is complete again when nothing else
-- keeps it from being so — what a job's success checks (no queued work but entries too large to
-- index whose media are known, no failed source, no reconciliation pending), and no other field
-- deletion of the collection still walking.
UPDATE _emdash_media_usage_index_status
SET status = 'complete',
    completed_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    last_error_code = NULL,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE adapter_id = 'content-media' AND scope_type = 'collection' AND collection_id = ?1
  AND capture_state = 'active' AND status = 'stale' AND reconciliation_required = 0
  AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage_work WHERE collection_id = ?1
                  AND (state <> 'failed' OR unindexed_media IS NULL))
  AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage_sources
                  WHERE collection_id = ?1 AND source_completeness = 'failed')
  AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage_field_deletions
                  WHERE collection_id = ?1 AND phase = 'occurrences')
