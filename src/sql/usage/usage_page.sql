WITH occ AS (
  SELECT s.collection_slug, s.content_id, s.source_variant, s.content_slug, s.content_title,
         s.content_status, s.locale, s.content_deleted_at,
         u.field_slug, u.field_path, u.occurrence_index, u.reference_type
  -- CROSS JOIN fixes the join order: start from the media's occurrences (indexed by media_id),
  -- whatever statistics the planner has.
  FROM _emdash_media_usage AS u
  CROSS JOIN _emdash_media_usage_sources AS s
  CROSS JOIN _emdash_collections AS c
  WHERE u.media_id = ?1
    AND s.source_key = u.source_key AND s.current_generation = u.generation
    AND c.id = s.collection_id AND c.slug = s.collection_slug
    AND s.source_type = 'content' AND s.identity_version = 1
    AND (s.source_variant = 'draft_overlay'
         OR s.content_status = 'published'
         OR NOT EXISTS (SELECT 1 FROM _emdash_media_usage_sources AS d
                        WHERE d.source_key = 'content:' || s.collection_id || ':' || s.content_id || ':draft_overlay'
                          AND d.current_generation IS NOT NULL))
),
page AS (
  SELECT DISTINCT collection_slug, content_id FROM occ
  WHERE ?2 IS NULL OR collection_slug > ?2 OR (collection_slug = ?2 AND content_id > ?3)
  ORDER BY collection_slug, content_id
  LIMIT ?4
)
SELECT occ.* FROM occ JOIN page USING (collection_slug, content_id)
ORDER BY occ.collection_slug, occ.content_id, occ.source_variant, occ.field_path
