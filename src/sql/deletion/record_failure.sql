-- Records a failed attempt under the live lease (?4 collection, ?5 lease token); see the failure
-- fragment for ?1-?3. The phase is kept; the attempt count becomes ?6 (the holder's: 1 when its
-- hold made progress, else what its claim counted). The batch ?7 and the kind of row ?8 the next
-- holder starts from are stored only if the holder's phase ?9 is still the row's: a checkpoint
-- that committed although its holder saw an error has moved the row on, and the next phase
-- starts at its first kind.
UPDATE _emdash_media_usage_collection_deletions
SET {fail},
    attempt_count = ?6,
    cleanup_batch_rows = CASE WHEN phase = ?9 THEN ?7 ELSE cleanup_batch_rows END,
    cleanup_rows_kind = CASE WHEN phase = ?9 THEN ?8 ELSE 0 END
WHERE collection_id = ?4 AND lease_token = ?5 AND lease_expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
