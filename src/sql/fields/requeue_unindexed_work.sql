-- The collection ?1's entries too large to index, queued afresh: without the deleted field an
-- entry may now fit, and the media its list names may no longer be used by it. Their lists hold
-- until a projection replaces or clears them. Read through the partial index of such rows.
UPDATE _emdash_media_usage_work INDEXED BY idx__emdash_media_usage_work_unindexed
SET work_version = work_version + 1,
    last_error_code = NULL,
    {reset_pending}
WHERE collection_id = ?1 AND unindexed_media IS NOT NULL AND state = 'failed'
