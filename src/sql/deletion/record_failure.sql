-- Records a failed attempt under the live lease (?4 collection, ?5 lease token); see the failure
-- fragment for ?1-?3. The phase is kept; the attempt count becomes ?6 (the holder's: 1 when its
-- hold made progress, else what its claim counted), and the batch ?7 and the kind of row ?8 the
-- next holder starts from are stored.
UPDATE _emdash_media_usage_collection_deletions
SET {fail},
    attempt_count = ?6,
    cleanup_batch_rows = ?7,
    cleanup_rows_kind = ?8
WHERE collection_id = ?4 AND lease_token = ?5 AND lease_expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
