-- Ends the first half of a job that published its entry's live columns alone (ids ?3, held by
-- ?2): the work row goes back queued, unleased and due now, marked with the work version the
-- half was published at. The next job that finds the mark equal to the row's work version
-- projects only the draft overlay; any write that queues the entry again bumps the work version,
-- which makes the mark stale. The half counts as the row's one attempt so far (a single job
-- takes it next, not a group).
UPDATE _emdash_media_usage_work
SET {release},
    partial_work_version = work_version,
    attempt_count = 1,
    next_attempt_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE collection_id = ?1 AND lease_token = ?2 AND state = 'leased'
  AND content_id IN (SELECT value FROM json_each(?3))
