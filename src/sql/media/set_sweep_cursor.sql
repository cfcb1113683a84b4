UPDATE _emdash_media_storage_sweep
SET cursor = ?1, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE id = 1
