SELECT count(*) AS n FROM (
  SELECT DISTINCT s.collection_id, s.content_id
  -- CROSS JOIN fixes the join order: start from the media's occurrences (indexed by media_id),
  -- whatever statistics the planner has.
  FROM _emdash_media_usage AS u
  CROSS JOIN _emdash_media_usage_sources AS s
  CROSS JOIN _emdash_collections AS c
  WHERE u.media_id = ?1
    AND s.source_key = u.source_key AND s.current_generation = u.generation
    AND c.id = s.collection_id AND c.slug = s.collection_slug
    AND s.source_type = 'content' AND s.identity_version = 1
    AND s.content_deleted_at IS NULL
    AND (s.source_variant = 'draft_overlay'
         OR s.content_status = 'published'
         OR NOT EXISTS (SELECT 1 FROM _emdash_media_usage_sources AS d
                        WHERE d.source_key = 'content:' || s.collection_id || ':' || s.content_id || ':draft_overlay'
                          AND d.current_generation IS NOT NULL))
)
