DELETE FROM _emdash_media_usage_work WHERE collection_id = ?1
