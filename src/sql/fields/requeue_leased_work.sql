-- The collection ?1's jobs under way, queued afresh under a new work version: a job that read
-- the field before its deletion can no longer publish (its publish asserts its lease and work
-- version), and its entry is projected again without the field. A few rows: the leases held.
UPDATE _emdash_media_usage_work
SET work_version = work_version + 1,
    last_error_code = NULL,
    {reset_pending}
WHERE collection_id = ?1 AND state = 'leased'
