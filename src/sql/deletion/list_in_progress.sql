SELECT * FROM _emdash_media_usage_collection_deletions
ORDER BY created_at, collection_id
LIMIT ?1
