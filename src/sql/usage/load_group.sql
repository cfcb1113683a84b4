-- A job's load (a single job is a group of one): for each content id in ?2 (in order) the entry,
-- its draft revision and its stored sources with their signature, as long as the rows read so
-- far hold fewer than ?3 bytes of field values and draft data (the entry that crosses it is the
-- last; the first is always read). The entry and its draft revision come back as two rows
-- (`__part` 'entry' and 'draft'), so no row, and no record SQLite builds on the way, holds both
-- (each alone is within D1's 2,000,000-byte limit; together they may not be): `entry` measures
-- them and keeps only the small columns. The entry's row also carries the registry slug of
-- collection ?1, its field epoch and its fields (on the first entry), and its draft revision's
-- identity and base version; the draft row carries the revision's data, its entry columns all
-- NULL (`e.id = NULL` matches no row, found by index).
WITH asked AS (SELECT k.key AS idx, ?1 AS collection_id, k.value AS content_id FROM json_each(?2) AS k),
entry AS MATERIALIZED (
  SELECT idx, collection_id, content_id FROM (
    SELECT asked.idx, asked.collection_id, asked.content_id,
      sum({row_bytes} + coalesce(length(CAST(r.data AS BLOB)), 0))
        OVER (ORDER BY asked.idx ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS bytes_before
    FROM asked
    LEFT JOIN {table} AS e ON e.id = asked.content_id
    LEFT JOIN revisions AS r ON r.id = e.draft_revision_id)
  WHERE coalesce(bytes_before, 0) < ?3)
SELECT e.*, 'entry' AS __part, entry.idx AS __idx, entry.content_id AS __content_id,
  r.id AS __rev_id, r.collection AS __rev_collection, r.entry_id AS __rev_entry_id, NULL AS __rev_data,
  r.base_version AS __rev_base_version,
  CASE WHEN entry.idx = 0 THEN (SELECT slug FROM _emdash_collections WHERE id = ?1) END AS __registry_slug,
  CASE WHEN entry.idx = 0 THEN (SELECT field_epoch FROM _emdash_collections WHERE id = ?1) END AS __field_epoch,
  CASE WHEN entry.idx = 0 THEN (SELECT json_group_array(json_object(
      'id', f.id, 'slug', f.slug, 'label', f.label, 'type', f.type, 'required', f.required,
      'validation', f.validation, 'sort_order', f.sort_order))
    FROM (SELECT * FROM _emdash_fields WHERE collection_id = ?1 ORDER BY sort_order, slug) AS f) END AS __fields,
  (SELECT json_group_array(json_object(
      'source_key', s.source_key, 'current_generation', s.current_generation,
      'source_fingerprint', s.source_fingerprint, 'source_completeness', s.source_completeness,
      'last_error_code', s.last_error_code))
   FROM (SELECT * FROM _emdash_media_usage_sources WHERE source_key IN ({entry_source_keys})
         ORDER BY source_key) AS s) AS __sources,
  {source_signature} AS __sources_sig
FROM entry
LEFT JOIN {table} AS e ON e.id = entry.content_id
LEFT JOIN revisions AS r ON r.id = e.draft_revision_id
UNION ALL
SELECT e.*, 'draft', entry.idx, entry.content_id, r.id, NULL, NULL, r.data, NULL, NULL, NULL, NULL, NULL, NULL
FROM entry
CROSS JOIN {table} AS live ON live.id = entry.content_id
CROSS JOIN revisions AS r ON r.id = live.draft_revision_id
LEFT JOIN {table} AS e ON e.id = NULL
