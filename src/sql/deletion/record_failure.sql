-- Records a failed attempt under the live lease (?4 collection, ?5 lease token); see the failure
-- fragment for ?1-?3. The phase is kept. With ?6, the attempt count is set to it (the attempts
-- since the step last made progress); with ?8, the cleanup batch is recorded: size ?8 for the
-- kind ?7 with the ceiling ?9.
UPDATE _emdash_media_usage_collection_deletions
SET {fail},
    attempt_count = COALESCE(?6, attempt_count),
    cleanup_rows = CASE WHEN ?8 IS NULL THEN cleanup_rows ELSE ?7 END,
    cleanup_batch_rows = COALESCE(?8, cleanup_batch_rows),
    cleanup_ceiling_rows = CASE WHEN ?8 IS NULL THEN cleanup_ceiling_rows ELSE ?9 END
WHERE collection_id = ?4 AND lease_token = ?5 AND lease_expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
