SELECT DISTINCT s.content_id AS id
FROM _emdash_media_usage_sources AS s
WHERE s.source_type = 'content' AND s.collection_id = ?1
  AND (?2 IS NULL OR s.content_id > ?2)
  AND NOT EXISTS (SELECT 1 FROM {table} AS e WHERE e.id = s.content_id)
ORDER BY s.content_id
LIMIT ?3
