SELECT * FROM _emdash_media_usage_collection_deletions
WHERE state = ?1
  AND (?2 IS NULL OR updated_at < ?2 OR (updated_at = ?2 AND collection_id < ?3))
ORDER BY updated_at DESC, collection_id DESC
LIMIT ?4
