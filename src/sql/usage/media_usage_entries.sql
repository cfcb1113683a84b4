SELECT collection_slug, content_id, content_slug, count(*) OVER () AS total
FROM (
  SELECT collection_slug, content_id, min(content_slug) AS content_slug
  FROM _emdash_media_usage_current
  WHERE media_id = ?1
  GROUP BY collection_slug, content_id
)
ORDER BY collection_slug, content_id
LIMIT ?2
