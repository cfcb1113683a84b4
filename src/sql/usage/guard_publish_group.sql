-- A group publish goes ahead only if, at this instant, the collection identity ?2/?3 exists and
-- for every entry of ?4 (objects with id, workVersion, version, updatedAt, draft, live, sig): its
-- work row is still leased by ?5 at that work version with a live lease, the entry is still at
-- the version, update time and revisions that were read (or still absent), and its stored
-- sources still have the signature that was read.
INSERT INTO _emdash_batch_guard (id)
SELECT CASE WHEN
  EXISTS (SELECT 1 FROM _emdash_collections WHERE id = ?2 AND slug = ?3)
  AND NOT EXISTS (
    SELECT 1 FROM json_each(?4) AS o
    WHERE NOT EXISTS (
            SELECT 1 FROM _emdash_media_usage_work AS w
            WHERE w.collection_id = ?2 AND w.content_id = json_extract(o.value, '$.id')
              AND w.lease_token = ?5 AND w.work_version = json_extract(o.value, '$.workVersion')
              AND w.state = 'leased' AND w.lease_expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
       OR NOT (
            (json_extract(o.value, '$.version') IS NULL
             AND NOT EXISTS (SELECT 1 FROM {table} AS e WHERE e.id = json_extract(o.value, '$.id')))
            OR EXISTS (SELECT 1 FROM {table} AS e
                       WHERE e.id = json_extract(o.value, '$.id')
                         AND e.version = json_extract(o.value, '$.version')
                         AND e.updated_at = json_extract(o.value, '$.updatedAt')
                         AND e.draft_revision_id IS json_extract(o.value, '$.draft')
                         AND e.live_revision_id IS json_extract(o.value, '$.live')))
       OR (SELECT json_group_array(json_array(s.source_key, s.current_generation, s.updated_at, s.source_fingerprint,
                                              s.source_completeness, s.last_error_code, s.collection_id,
                                              s.source_updated_at, s.source_version, s.identity_version,
                                              s.revision_id, s.last_attempted_at))
           FROM (SELECT * FROM _emdash_media_usage_sources
                 WHERE source_key IN ('content:' || ?2 || ':' || json_extract(o.value, '$.id') || ':columns',
                                      'content:' || ?2 || ':' || json_extract(o.value, '$.id') || ':draft_overlay')
                 ORDER BY source_key) AS s) IS NOT json_extract(o.value, '$.sig'))
THEN ?1 END
