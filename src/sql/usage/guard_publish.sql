INSERT INTO _emdash_batch_guard (id)
SELECT CASE WHEN
  EXISTS (SELECT 1 FROM _emdash_media_usage_work
          WHERE collection_id = ?2 AND content_id = ?3 AND lease_token = ?4 AND work_version = ?5
            AND state = 'leased' AND lease_expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
  AND EXISTS (SELECT 1 FROM _emdash_collections WHERE id = ?2 AND slug = ?6)
  AND ((?7 IS NULL AND NOT EXISTS (SELECT 1 FROM {table} WHERE id = ?3))
       OR EXISTS (SELECT 1 FROM {table}
                  WHERE id = ?3 AND version = ?7 AND updated_at = ?8
                    AND draft_revision_id IS ?9 AND live_revision_id IS ?10))
  AND (SELECT json_group_array(json_array(s.source_key, s.current_generation, s.updated_at, s.source_fingerprint,
                                          s.source_completeness, s.last_error_code, s.collection_id,
                                          s.source_updated_at, s.source_version, s.identity_version,
                                          s.revision_id, s.last_attempted_at))
       FROM (SELECT * FROM _emdash_media_usage_sources WHERE source_key IN (?11, ?12) ORDER BY source_key) AS s) = ?13
THEN ?1 END
