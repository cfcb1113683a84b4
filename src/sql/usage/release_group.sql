-- Hands the group's rows ?3 that it did not publish back to single jobs: due now, unleased, with
-- the attempt the group made counted (single jobs take rows that were attempted before).
UPDATE _emdash_media_usage_work
SET {release},
    next_attempt_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE collection_id = ?1 AND lease_token = ?2 AND state = 'leased'
  AND content_id IN (SELECT value FROM json_each(?3))
