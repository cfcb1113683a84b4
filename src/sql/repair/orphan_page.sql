WITH page AS (
  SELECT DISTINCT s.content_id
  FROM _emdash_media_usage_sources AS s
  WHERE s.source_type = 'content' AND s.collection_id = ?1 AND s.content_id > coalesce(?2, '')
  ORDER BY s.content_id
  LIMIT ?3
)
SELECT p.content_id AS id,
       NOT EXISTS (SELECT 1 FROM {table} AS e WHERE e.id = p.content_id) AS orphan
FROM page AS p
ORDER BY p.content_id
