-- The source rows of a publish: the JSON arrays ?1 and ?2 (one per source variant; either may be
-- NULL), each within one bound value. A row with a new generation supersedes the stored one.
INSERT INTO _emdash_media_usage_sources
  (source_key, source_type, collection_id, collection_slug, content_id, source_variant, locale,
   translation_group, content_slug, content_title, content_status, content_scheduled_at,
   content_deleted_at, revision_id, current_generation, schema_version, source_updated_at,
   source_version, source_fingerprint, identity_version, source_completeness, last_attempted_at,
   last_error_code, indexed_at, pending_keys)
SELECT json_extract(s.value, '$.sourceKey'), 'content',
       json_extract(s.value, '$.collectionId'), json_extract(s.value, '$.collectionSlug'),
       json_extract(s.value, '$.contentId'), json_extract(s.value, '$.variant'),
       json_extract(s.value, '$.locale'), json_extract(s.value, '$.translationGroup'),
       json_extract(s.value, '$.contentSlug'), json_extract(s.value, '$.contentTitle'),
       json_extract(s.value, '$.contentStatus'), json_extract(s.value, '$.contentScheduledAt'),
       json_extract(s.value, '$.contentDeletedAt'), json_extract(s.value, '$.revisionId'),
       json_extract(s.value, '$.generation'), json_extract(s.value, '$.schemaVersion'),
       json_extract(s.value, '$.sourceUpdatedAt'), json_extract(s.value, '$.sourceVersion'),
       json_extract(s.value, '$.fingerprint'), 1, json_extract(s.value, '$.completeness'),
       strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), json_extract(s.value, '$.errorCode'),
       CASE WHEN json_extract(s.value, '$.generation') IS NOT NULL
            THEN strftime('%Y-%m-%dT%H:%M:%fZ', 'now') END,
       json_extract(s.value, '$.pendingKeys')
FROM (SELECT value FROM json_each(?1) UNION ALL SELECT value FROM json_each(?2)) AS s
WHERE true
ON CONFLICT (source_key) DO UPDATE SET
  locale = excluded.locale,
  translation_group = excluded.translation_group,
  content_slug = excluded.content_slug,
  content_title = excluded.content_title,
  content_status = excluded.content_status,
  content_scheduled_at = excluded.content_scheduled_at,
  content_deleted_at = excluded.content_deleted_at,
  revision_id = excluded.revision_id,
  current_generation = coalesce(excluded.current_generation, current_generation),
  schema_version = excluded.schema_version,
  source_updated_at = excluded.source_updated_at,
  source_version = excluded.source_version,
  source_fingerprint = CASE WHEN excluded.current_generation IS NOT NULL
                            THEN excluded.source_fingerprint ELSE source_fingerprint END,
  identity_version = 1,
  source_completeness = excluded.source_completeness,
  last_attempted_at = excluded.last_attempted_at,
  last_error_code = excluded.last_error_code,
  indexed_at = coalesce(excluded.indexed_at, indexed_at),
  pending_keys = CASE WHEN excluded.current_generation IS NOT NULL
                      THEN excluded.pending_keys ELSE pending_keys END,
  updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
