-- The relink ?1 (leased under ?2) walked past its item's last file URL occurrence: done.
UPDATE _emdash_media_relinks
SET finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    entries_left = 0,
    entries_left_capped = 0,
    conflict_attempts = 0,
    {release}
WHERE id = ?1 AND lease_token = ?2 AND state = 'leased'
