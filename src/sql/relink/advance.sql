-- The relink ?1 (leased under ?2) is past the entry ending at the cursor ?3: one more done,
-- ?4 more changed, ?5 more passed over unsettled. What it has left goes down by one, and is
-- counted again from the cursor (up to ?6) when a capped count reaches 0 (?7: the media item).
UPDATE _emdash_media_relinks
SET cursor = ?3,
    entries_done = entries_done + 1,
    entries_changed = entries_changed + ?4,
    entries_unsettled = entries_unsettled + ?5,
    conflict_attempts = 0,
    entries_left = CASE
      WHEN entries_left > 1 OR entries_left_capped = 0 THEN max(entries_left - 1, 0)
      ELSE min((SELECT count(*) FROM (
        SELECT DISTINCT substr(u.source_key, 1, length(u.source_key) - CASE WHEN u.source_key LIKE '%:columns' THEN 7 ELSE 13 END)
        FROM _emdash_media_usage AS u
        WHERE u.media_id = ?7 AND u.source_key > ?3
          AND u.reference_type = 'embedded_url'
        LIMIT ?6 + 1)), ?6)
    END,
    entries_left_capped = CASE
      WHEN entries_left > 1 OR entries_left_capped = 0 THEN entries_left_capped
      ELSE (SELECT count(*) FROM (
        SELECT DISTINCT substr(u.source_key, 1, length(u.source_key) - CASE WHEN u.source_key LIKE '%:columns' THEN 7 ELSE 13 END)
        FROM _emdash_media_usage AS u
        WHERE u.media_id = ?7 AND u.source_key > ?3
          AND u.reference_type = 'embedded_url'
        LIMIT ?6 + 1)) > ?6
    END,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE id = ?1 AND lease_token = ?2 AND state = 'leased'
