-- Ends the group's published jobs: their work rows (ids ?3) go.
DELETE FROM _emdash_media_usage_work
WHERE collection_id = ?1 AND lease_token = ?2 AND state = 'leased'
  AND content_id IN (SELECT value FROM json_each(?3))
