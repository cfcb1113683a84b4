-- The relink ?4 (leased under ?5) fails for good with the code ?3: it ends.
UPDATE _emdash_media_relinks
SET {fail},
    finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE id = ?4 AND lease_token = ?5 AND state = 'leased'
