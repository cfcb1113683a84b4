-- The tick is over: the relink ?1 (leased under ?2) is handed back, due again at once; it got
-- this far, so its claims start counting again.
UPDATE _emdash_media_relinks
SET {release},
    attempt_count = 0,
    next_attempt_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE id = ?1 AND lease_token = ?2 AND state = 'leased'
