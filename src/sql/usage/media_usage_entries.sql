SELECT collection_slug, content_id, content_slug, count(*) OVER () AS total
FROM (
  SELECT s.collection_slug, s.content_id, min(s.content_slug) AS content_slug
  FROM _emdash_media_usage AS u
  CROSS JOIN _emdash_media_usage_sources AS s
  CROSS JOIN _emdash_collections AS c
  WHERE u.media_id = ?1
    AND s.source_key = u.source_key AND s.current_generation = u.generation
    AND c.id = s.collection_id AND c.slug = s.collection_slug
  GROUP BY s.collection_slug, s.content_id
)
ORDER BY collection_slug, content_id
LIMIT ?2
