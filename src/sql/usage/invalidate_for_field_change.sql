-- A field of the collection ?1 (slug ?2) was deleted or changed: its coverage is not complete
-- until the ticks have brought the index in line. With ?3 = 1 every entry must be projected
-- again (what counts as a use changed), which a repair run under the deployed rules does: the
-- rules mark '' asks the repair lane for one, and a run in progress ends (it may have projected
-- entries under the field as it was). Otherwise a run in progress goes on: its finalisation
-- waits for the deletion's walk.
UPDATE _emdash_media_usage_index_status
SET change_epoch = change_epoch + 1,
    status = CASE WHEN status = 'complete' OR (?3 = 1 AND status = 'running') THEN 'stale' ELSE status END,
    completed_at = CASE WHEN status = 'complete' OR (?3 = 1 AND status = 'running') THEN NULL ELSE completed_at END,
    rules_version = CASE WHEN ?3 = 1 THEN '' ELSE rules_version END,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE adapter_id = 'content-media' AND scope_type = 'collection'
  AND collection_id = ?1 AND scope_key = ?2 AND capture_state = 'active'
