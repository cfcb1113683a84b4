DELETE FROM _emdash_media_usage_work
WHERE collection_id = ?1 AND content_id = ?2 AND lease_token = ?3
  AND NOT EXISTS (SELECT 1 FROM _emdash_collections WHERE id = ?1 AND slug = ?4)
