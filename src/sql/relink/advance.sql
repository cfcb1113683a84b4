-- The relink ?1 of the media item ?2 (leased under ?5) is past the entries up to the cursor ?3:
-- ?6 more done, ?7 of them changed, ?8 passed over unsettled. What it has left goes down by
-- those done, and is counted again from the cursor (up to ?4) when a capped count reaches 0.
UPDATE _emdash_media_relinks
SET cursor = ?3,
    entries_done = entries_done + ?6,
    entries_changed = entries_changed + ?7,
    entries_unsettled = entries_unsettled + ?8,
    conflict_attempts = 0,
    entries_left = CASE
      WHEN entries_left > ?6 OR entries_left_capped = 0 THEN max(entries_left - ?6, 0)
      ELSE min((SELECT count(*) FROM ({entries_after})), ?4)
    END,
    entries_left_capped = CASE
      WHEN entries_left > ?6 OR entries_left_capped = 0 THEN entries_left_capped
      ELSE (SELECT count(*) FROM ({entries_after})) > ?4
    END,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE id = ?1 AND media_id = ?2 AND lease_token = ?5 AND state = 'leased'
