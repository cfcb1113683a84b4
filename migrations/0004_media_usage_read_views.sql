-- The read paths' common starting points, so "Used in", usage counts and the safe media delete
-- share one definition. Both views start from the occurrences (CROSS JOIN fixes the join order),
-- so a `media_id = ?` filter is answered from the media index.

-- Occurrences of the current generation of registered collections' canonical content sources.
CREATE VIEW _emdash_media_usage_current AS
SELECT u.media_id, u.field_slug, u.field_path, u.occurrence_index, u.reference_type, u.media_kind, u.provider,
       s.source_key, s.collection_id, s.collection_slug, s.content_id, s.source_variant, s.content_slug,
       s.content_title, s.content_status, s.locale, s.content_deleted_at
FROM _emdash_media_usage AS u
CROSS JOIN _emdash_media_usage_sources AS s
CROSS JOIN _emdash_collections AS c
WHERE s.source_key = u.source_key AND s.current_generation = u.generation
  AND c.id = s.collection_id AND c.slug = s.collection_slug
  AND s.source_type = 'content' AND s.identity_version = 1;

-- Of those, the ones a reader sees as "in use": a draft overlay always; the live columns when the
-- entry is published or has no draft overlay.
CREATE VIEW _emdash_media_usage_eligible AS
SELECT cur.*
FROM _emdash_media_usage_current AS cur
WHERE cur.source_variant = 'draft_overlay'
   OR cur.content_status = 'published'
   OR NOT EXISTS (SELECT 1 FROM _emdash_media_usage_sources AS d
                  WHERE d.source_key = 'content:' || cur.collection_id || ':' || cur.content_id || ':draft_overlay'
                    AND d.current_generation IS NOT NULL);
