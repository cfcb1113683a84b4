-- Claims work under one lease token ?1 for ?2 seconds: up to ?3 group rows of one collection —
-- the collection of the earliest group row — for a group job; or, when no group row is due, the
-- one row a single job would claim (a retry that is due, or a lease that expired). A group row
-- is a fresh due row (pending, never attempted) or the row of a group or job that died on its
-- first attempt (leased once, lease expired): a dead tick's group is taken again as a group, and
-- a row that dies twice goes through single jobs, which record failures. Rows of a collection
-- being deleted are left to its deletion, which deletes them.
--
-- What it reads does not grow with the queue: each registered collection's earliest pending row
-- is found by the `operator` index (collection, state, updated_at: a pending row is due from
-- when it was queued), its retrying and leased rows are the few its failed and running jobs
-- hold, and the claimed rows are read in that order up to ?3. The rows of a collection being
-- deleted are never visited (it is not registered, or it is fenced), however many it has.
WITH live(collection_id) AS (
  SELECT id FROM _emdash_collections
  WHERE id NOT IN (SELECT collection_id FROM _emdash_media_usage_collection_deletions)
  -- Work of a collection neither registered nor being deleted (its registry row removed outside
  -- a deletion) is claimed too, so its job finds it obsolete: its collection is looked at when
  -- its row is the first of the queue in due order (three rows read).
  UNION
  SELECT collection_id FROM (
    SELECT * FROM (SELECT collection_id FROM _emdash_media_usage_work INDEXED BY idx__emdash_media_usage_work_due
                   WHERE state = 'pending'
                   ORDER BY next_attempt_at LIMIT 1)
    UNION ALL
    SELECT * FROM (SELECT collection_id FROM _emdash_media_usage_work INDEXED BY idx__emdash_media_usage_work_due
                   WHERE state = 'retry'
                   ORDER BY next_attempt_at LIMIT 1)
    UNION ALL
    SELECT * FROM (SELECT collection_id FROM _emdash_media_usage_work INDEXED BY idx__emdash_media_usage_work_lease
                   WHERE state = 'leased'
                   ORDER BY lease_expires_at LIMIT 1))
  WHERE collection_id NOT IN (SELECT id FROM _emdash_collections)
    AND collection_id NOT IN (SELECT collection_id FROM _emdash_media_usage_collection_deletions)),
heads(collection_id, group_due, single_due) AS (
  SELECT l.collection_id,
    (SELECT min(due) FROM (
       SELECT * FROM (
         SELECT w.updated_at AS due FROM _emdash_media_usage_work AS w INDEXED BY idx__emdash_media_usage_work_operator
         WHERE w.collection_id = l.collection_id AND w.state = 'pending' AND w.attempt_count = 0
           AND w.next_attempt_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
         ORDER BY w.updated_at LIMIT 1)
       UNION ALL
       SELECT min(w.lease_expires_at) FROM _emdash_media_usage_work AS w INDEXED BY idx__emdash_media_usage_work_operator
       WHERE w.collection_id = l.collection_id AND w.state = 'leased' AND w.attempt_count = 1
         AND w.lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))),
    (SELECT min(due) FROM (
       SELECT * FROM (
         SELECT w.updated_at AS due FROM _emdash_media_usage_work AS w INDEXED BY idx__emdash_media_usage_work_operator
         WHERE w.collection_id = l.collection_id AND w.state = 'pending'
           AND w.next_attempt_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
         ORDER BY w.updated_at LIMIT 1)
       UNION ALL
       SELECT min(w.next_attempt_at) FROM _emdash_media_usage_work AS w INDEXED BY idx__emdash_media_usage_work_operator
       WHERE w.collection_id = l.collection_id AND w.state = 'retry'
         AND w.next_attempt_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
       UNION ALL
       SELECT min(w.lease_expires_at) FROM _emdash_media_usage_work AS w INDEXED BY idx__emdash_media_usage_work_operator
       WHERE w.collection_id = l.collection_id AND w.state = 'leased'
         AND w.lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))
  FROM live AS l),
group_head(collection_id) AS (
  SELECT collection_id FROM heads WHERE group_due IS NOT NULL ORDER BY group_due, collection_id LIMIT 1),
single_head(collection_id) AS (
  SELECT collection_id FROM heads WHERE single_due IS NOT NULL ORDER BY single_due, collection_id LIMIT 1)
UPDATE _emdash_media_usage_work
SET {set_leased},
    last_attempted_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE rowid IN (
  SELECT rid FROM (
    SELECT * FROM (
      SELECT w.rowid AS rid, w.updated_at AS due, w.content_id
      FROM _emdash_media_usage_work AS w INDEXED BY idx__emdash_media_usage_work_operator
      WHERE w.collection_id = (SELECT collection_id FROM group_head)
        AND w.state = 'pending' AND w.attempt_count = 0
        AND w.next_attempt_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
      ORDER BY w.updated_at, w.content_id LIMIT ?3)
    UNION ALL
    SELECT * FROM (
      SELECT w.rowid AS rid, w.lease_expires_at AS due, w.content_id
      FROM _emdash_media_usage_work AS w INDEXED BY idx__emdash_media_usage_work_operator
      WHERE w.collection_id = (SELECT collection_id FROM group_head)
        AND w.state = 'leased' AND w.attempt_count = 1
        AND w.lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
      ORDER BY w.lease_expires_at LIMIT ?3)
    ORDER BY due, content_id
    LIMIT ?3)
  UNION ALL
  SELECT rid FROM (
    SELECT * FROM (
      SELECT w.rowid AS rid, w.updated_at AS due, w.content_id
      FROM _emdash_media_usage_work AS w INDEXED BY idx__emdash_media_usage_work_operator
      WHERE w.collection_id = (SELECT collection_id FROM single_head) AND w.state = 'pending'
        AND w.next_attempt_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
      ORDER BY w.updated_at, w.content_id LIMIT 1)
    UNION ALL
    SELECT * FROM (
      SELECT w.rowid AS rid, w.next_attempt_at AS due, w.content_id
      FROM _emdash_media_usage_work AS w INDEXED BY idx__emdash_media_usage_work_operator
      WHERE w.collection_id = (SELECT collection_id FROM single_head) AND w.state = 'retry'
        AND w.next_attempt_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
      ORDER BY w.next_attempt_at LIMIT 1)
    UNION ALL
    SELECT * FROM (
      SELECT w.rowid AS rid, w.lease_expires_at AS due, w.content_id
      FROM _emdash_media_usage_work AS w INDEXED BY idx__emdash_media_usage_work_operator
      WHERE w.collection_id = (SELECT collection_id FROM single_head) AND w.state = 'leased'
        AND w.lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
      ORDER BY w.lease_expires_at LIMIT 1)
    ORDER BY due, content_id
    LIMIT 1)
  WHERE NOT EXISTS (SELECT 1 FROM group_head))
RETURNING *
