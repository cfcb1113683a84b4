UPDATE _emdash_media_usage_collection_deletions
SET {reset_pending},
    last_error_code = NULL,
    -- The operator's retry starts the cleanup batch afresh: small (?2), for no kind, no ceiling.
    cleanup_batch_rows = ?2,
    cleanup_rows = NULL,
    cleanup_ceiling_rows = NULL
WHERE collection_id = ?1
  -- Only a leased row has an expiry (a CHECK constraint).
  AND (state IN ('failed', 'retry') OR lease_expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
RETURNING *
