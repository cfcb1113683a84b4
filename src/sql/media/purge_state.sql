-- Where the purge stands, read once per tick: the last trashed item the pass in progress
-- examined (NULL: the pass starts at the oldest), whether a pass may run now (`due`: none has
-- ended, or the rest after the last one is over), the same of the versions' purge, and `ready`: no registered collection's
-- coverage row says it is incomplete, pending a reconciliation, or proven under other rules than
-- the deployed ones (?1); a collection being deleted has left the registry, as the rule reads it.
-- While `due` or `ready` is false the purge rests, and this read of one row and the coverage
-- rows is all it costs. `ready` is looser than the safe delete's rule (a collection
-- without a coverage row passes it) and decides nothing about an item: the purging statement
-- embeds the rule itself (`unused_and_proven.sql`).
SELECT p.cursor_deleted_at, p.cursor_id,
  (p.next_pass_at IS NULL OR p.next_pass_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) AS due,
  -- The same for the versions' purge (migration 0029): its cursor and whether a pass may run.
  p.version_cursor_at, p.version_cursor_key,
  (p.version_next_pass_at IS NULL OR p.version_next_pass_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) AS versions_due,
  NOT EXISTS (
    -- (From the registry: a coverage row per registered collection is read, no other. Each is
    -- found by its primary key, every column of which is matched: a one-row lookup that never
    -- steps on to the next coverage row, a collection being deleted's say.)
    SELECT 1 FROM _emdash_collections AS c
    CROSS JOIN _emdash_media_usage_index_status AS s INDEXED BY sqlite_autoindex__emdash_media_usage_index_status_1
      ON s.adapter_id = 'content-media' AND s.scope_type = 'collection'
     AND s.collection_id = c.id AND s.scope_key = c.slug
    WHERE s.status <> 'complete' OR s.reconciliation_required <> 0 OR s.rules_version IS NOT ?1) AS ready
FROM _emdash_media_purge AS p
WHERE p.id = 1
