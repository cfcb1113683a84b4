-- Records a failed attempt under the live lease (?4 field, ?5 lease token); see the failure
-- fragment for ?1-?3. The phase is kept; the attempt count becomes ?6 (the holder's: 1 when its
-- hold made progress, else what its claim counted). The batch ?7 the next holder starts from is
-- stored only if the holder's phase ?8 is still the row's.
UPDATE _emdash_media_usage_field_deletions
SET {fail},
    attempt_count = ?6,
    batch_rows = CASE WHEN phase = ?8 THEN ?7 ELSE batch_rows END
WHERE field_id = ?4 AND lease_token = ?5 AND lease_expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
