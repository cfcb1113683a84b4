SELECT *, (lease_expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) AS lease_live
FROM _emdash_media_usage_collection_deletions
WHERE collection_id = ?1
