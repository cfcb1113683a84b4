-- Claims work under one lease token ?1 for ?2 seconds: up to ?3 group rows of one collection —
-- the collection of the earliest group row — for a group job; or, when no group row is due, the
-- one row a single job would claim (a retry that is due, or a lease that expired). A group row
-- is a fresh due row (pending, never attempted) or the row of a group or job that died on its
-- first attempt (leased once, lease expired): a dead tick's group is taken again as a group, and
-- a row that dies twice goes through single jobs, which record failures. Rows of a collection
-- being deleted are left to its deletion, which deletes them.
WITH group_head(collection_id) AS (
  SELECT collection_id FROM (
    SELECT * FROM (
      SELECT collection_id, next_attempt_at AS due, updated_at, content_id
      FROM _emdash_media_usage_work
      WHERE state = 'pending' AND attempt_count = 0
        AND next_attempt_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
        AND collection_id NOT IN (SELECT collection_id FROM _emdash_media_usage_collection_deletions)
      ORDER BY next_attempt_at, updated_at, collection_id, content_id LIMIT 1)
    UNION ALL
    SELECT * FROM (
      SELECT collection_id, lease_expires_at AS due, updated_at, content_id
      FROM _emdash_media_usage_work
      WHERE state = 'leased' AND attempt_count = 1
        AND lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
        AND collection_id NOT IN (SELECT collection_id FROM _emdash_media_usage_collection_deletions)
      ORDER BY lease_expires_at, updated_at, collection_id, content_id LIMIT 1)
    ORDER BY due, updated_at, collection_id, content_id
    LIMIT 1))
UPDATE _emdash_media_usage_work
SET {set_leased},
    last_attempted_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE rowid IN (
  SELECT rid FROM (
    SELECT * FROM (
      SELECT w.rowid AS rid, w.next_attempt_at AS due, w.updated_at, w.content_id
      FROM _emdash_media_usage_work AS w
      WHERE w.state = 'pending' AND w.attempt_count = 0
        AND w.next_attempt_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
        AND w.collection_id = (SELECT collection_id FROM group_head))
    UNION ALL
    SELECT * FROM (
      SELECT w.rowid AS rid, w.lease_expires_at AS due, w.updated_at, w.content_id
      FROM _emdash_media_usage_work AS w
      WHERE w.state = 'leased' AND w.attempt_count = 1
        AND w.lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
        AND w.collection_id = (SELECT collection_id FROM group_head))
    ORDER BY due, updated_at, content_id
    LIMIT ?3)
  UNION ALL
  SELECT rid FROM (
    SELECT * FROM (
      SELECT rowid AS rid, next_attempt_at AS due, updated_at, collection_id, content_id
      FROM _emdash_media_usage_work
      WHERE state IN ('pending', 'retry') AND next_attempt_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
        AND collection_id NOT IN (SELECT collection_id FROM _emdash_media_usage_collection_deletions)
      ORDER BY next_attempt_at, updated_at, collection_id, content_id LIMIT 1)
    UNION ALL
    SELECT * FROM (
      SELECT rowid AS rid, lease_expires_at AS due, updated_at, collection_id, content_id
      FROM _emdash_media_usage_work
      WHERE state = 'leased' AND lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
        AND collection_id NOT IN (SELECT collection_id FROM _emdash_media_usage_collection_deletions)
      ORDER BY lease_expires_at, updated_at, collection_id, content_id LIMIT 1)
    ORDER BY due, updated_at, collection_id, content_id
    LIMIT 1)
  WHERE NOT EXISTS (SELECT 1 FROM group_head))
RETURNING *
