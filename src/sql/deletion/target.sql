SELECT (SELECT id FROM _emdash_collections WHERE slug = ?1) AS registry_id,
       t.*, (t.lease_expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) AS lease_live
FROM (SELECT 1) AS one
LEFT JOIN _emdash_media_usage_collection_deletions AS t ON t.collection_slug = ?1
