-- Records a failed attempt of the job that holds the work row (?4 collection, ?5 entry, lease
-- token ?6, work version ?7); see the failure fragment for ?1-?3.
UPDATE _emdash_media_usage_work
SET {fail},
    -- The media an entry over the admission limit references (JSON ids), else NULL.
    unindexed_media = ?8
WHERE collection_id = ?4 AND content_id = ?5 AND lease_token = ?6 AND work_version = ?7 AND state = 'leased'
