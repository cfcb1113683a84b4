SELECT w.*, (SELECT e.slug FROM {table} AS e WHERE e.id = w.content_id) AS content_slug
FROM _emdash_media_usage_work AS w
WHERE w.collection_id = ?1
  AND (?2 IS NULL OR w.state = ?2)
  AND (?3 IS NULL OR w.updated_at < ?3 OR (w.updated_at = ?3 AND w.content_id < ?4))
ORDER BY w.updated_at DESC, w.content_id DESC
LIMIT ?5
