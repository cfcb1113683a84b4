-- Moves the deletion held by ?2 at phase ?3 to phase ?4 with the cursor (?5, ?6) and the batch
-- ?7; with ?8 = 1 it also releases it (pending, due now). Progress: the attempt under way (the
-- claim counted it) is the only one; a release ends it.
UPDATE _emdash_media_usage_field_deletions
SET phase = ?4,
    cursor_key = ?5,
    cursor_id = ?6,
    batch_rows = ?7,
    attempt_count = CASE WHEN ?8 = 1 THEN 0 ELSE 1 END,
    last_error_code = NULL,
    {release},
    next_attempt_at = CASE WHEN ?8 = 1 THEN strftime('%Y-%m-%dT%H:%M:%fZ', 'now') ELSE next_attempt_at END
WHERE field_id = ?1 AND lease_token = ?2 AND phase = ?3
  AND lease_expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
