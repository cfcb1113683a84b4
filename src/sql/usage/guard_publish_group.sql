-- A job's publish (a single job is a group of one) goes ahead only if, at this instant, the
-- collection identity ?2/?3 exists and for every entry of ?4 (objects with id, workVersion,
-- version, updatedAt, draft, live, sig): its work row is still leased by ?5 at that work version
-- with a live lease, the entry is still at the version, update time and revisions that were read
-- (or still absent), and its stored sources still have the signature that was read.
INSERT INTO _emdash_batch_guard (id)
SELECT CASE WHEN
  EXISTS (SELECT 1 FROM _emdash_collections WHERE id = ?2 AND slug = ?3)
  AND NOT EXISTS (
    SELECT 1 FROM (SELECT ?2 AS collection_id, json_extract(o.value, '$.id') AS content_id, o.value AS observed
                   FROM json_each(?4) AS o) AS entry
    WHERE NOT EXISTS (
            SELECT 1 FROM _emdash_media_usage_work AS w
            WHERE w.collection_id = entry.collection_id AND w.content_id = entry.content_id
              AND w.lease_token = ?5 AND w.work_version = json_extract(entry.observed, '$.workVersion')
              AND w.state = 'leased' AND w.lease_expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
       OR NOT (
            (json_extract(entry.observed, '$.version') IS NULL
             AND NOT EXISTS (SELECT 1 FROM {table} AS e WHERE e.id = entry.content_id))
            OR EXISTS (SELECT 1 FROM {table} AS e
                       WHERE e.id = entry.content_id
                         AND e.version = json_extract(entry.observed, '$.version')
                         AND e.updated_at = json_extract(entry.observed, '$.updatedAt')
                         AND e.draft_revision_id IS json_extract(entry.observed, '$.draft')
                         AND e.live_revision_id IS json_extract(entry.observed, '$.live')))
       OR {source_signature} IS NOT json_extract(entry.observed, '$.sig'))
THEN ?1 END
