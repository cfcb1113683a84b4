SELECT count(*) AS n FROM (
  SELECT DISTINCT s.collection_id, s.content_id
  FROM _emdash_media_usage AS u
  JOIN _emdash_media_usage_sources AS s
    ON s.source_key = u.source_key AND s.current_generation = u.generation
  JOIN _emdash_collections AS c ON c.id = s.collection_id AND c.slug = s.collection_slug
  WHERE u.media_id = ?1 AND s.source_type = 'content' AND s.identity_version = 1
    AND s.content_deleted_at IS NULL
    AND (s.source_variant = 'draft_overlay'
         OR s.content_status = 'published'
         OR NOT EXISTS (SELECT 1 FROM _emdash_media_usage_sources AS d
                        WHERE d.source_key = 'content:' || s.collection_id || ':' || s.content_id || ':draft_overlay'
                          AND d.current_generation IS NOT NULL))
)
