-- The relink ?1 (leased under ?2) lost the write of the entry at its cursor to a concurrent
-- edit: counted; the entry is loaded again at a later step.
UPDATE _emdash_media_relinks
SET conflicts = conflicts + 1,
    conflict_attempts = conflict_attempts + 1,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE id = ?1 AND lease_token = ?2 AND state = 'leased'
RETURNING conflict_attempts
