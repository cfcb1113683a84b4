WITH occ AS (
  SELECT collection_slug, content_id, source_key, source_variant, content_slug, content_title,
         content_status, locale, content_deleted_at,
         field_slug, field_path, occurrence_index, reference_type
  FROM _emdash_media_usage_eligible
  WHERE media_id = ?1
),
page AS (
  SELECT DISTINCT collection_slug, content_id FROM occ
  WHERE ?2 IS NULL OR collection_slug > ?2 OR (collection_slug = ?2 AND content_id > ?3)
  ORDER BY collection_slug, content_id
  LIMIT ?4
)
SELECT occ.collection_slug, occ.content_id, occ.source_variant, occ.content_slug, occ.content_title,
       occ.content_status, occ.locale, occ.content_deleted_at,
       occ.field_slug, occ.field_path, occ.occurrence_index, occ.reference_type,
       s.content_scheduled_at,
       -- The storage key a file URL names (the item's current file or one of its versions).
       (SELECT u.linked_key FROM _emdash_media_usage AS u
        WHERE u.source_key = occ.source_key AND u.generation = s.current_generation
          AND u.field_path = occ.field_path AND u.occurrence_index = occ.occurrence_index) AS linked_key
FROM occ JOIN page USING (collection_slug, content_id)
JOIN _emdash_media_usage_sources AS s ON s.source_key = occ.source_key
ORDER BY occ.collection_slug, occ.content_id, occ.source_variant, occ.field_path
