DELETE FROM _emdash_media_usage_work
WHERE collection_id = ?1 AND content_id = ?2 AND lease_token = ?3 AND work_version = ?4 AND state = 'leased'
