-- The occurrences of a publish: the JSON arrays ?1 and ?2 (one per source variant; either may be
-- NULL), each within one bound value; `linkedKey` is the storage key a file URL names.
INSERT INTO _emdash_media_usage
  (id, source_key, generation, field_slug, field_path, occurrence_index, reference_type,
   media_id, provider, provider_asset_id, media_kind, mime_type, linked_key)
SELECT lower(hex(randomblob(16))),
       json_extract(o.value, '$.sourceKey'),
       json_extract(o.value, '$.generation'),
       json_extract(o.value, '$.fieldSlug'),
       json_extract(o.value, '$.fieldPath'),
       json_extract(o.value, '$.occurrenceIndex'),
       json_extract(o.value, '$.referenceType'),
       CASE WHEN json_extract(o.value, '$.provider') = 'local' THEN json_extract(o.value, '$.providerAssetId') END,
       json_extract(o.value, '$.provider'),
       json_extract(o.value, '$.providerAssetId'),
       json_extract(o.value, '$.mediaKind'),
       json_extract(o.value, '$.mimeType'),
       json_extract(o.value, '$.linkedKey')
FROM (SELECT value FROM json_each(?1) UNION ALL SELECT value FROM json_each(?2)) AS o
