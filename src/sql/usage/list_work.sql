SELECT * FROM _emdash_media_usage_work
WHERE collection_id = ?1
  AND (?2 IS NULL OR state = ?2)
  AND (?3 IS NULL OR updated_at < ?3 OR (updated_at = ?3 AND content_id < ?4))
ORDER BY updated_at DESC, content_id DESC
LIMIT ?5
