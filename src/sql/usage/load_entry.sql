SELECT e.*,
  r.id AS __rev_id, r.collection AS __rev_collection, r.entry_id AS __rev_entry_id, r.data AS __rev_data,
  (SELECT slug FROM _emdash_collections WHERE id = ?1) AS __registry_slug,
  (SELECT json_group_array(json_object(
      'id', f.id, 'slug', f.slug, 'label', f.label, 'type', f.type, 'required', f.required,
      'validation', f.validation, 'sort_order', f.sort_order))
   FROM (SELECT * FROM _emdash_fields WHERE collection_id = ?1 ORDER BY sort_order, slug) AS f) AS __fields,
  (SELECT json_group_array(json_object(
      'source_key', s.source_key, 'current_generation', s.current_generation,
      'source_fingerprint', s.source_fingerprint, 'source_completeness', s.source_completeness,
      'last_error_code', s.last_error_code))
   FROM (SELECT * FROM _emdash_media_usage_sources WHERE source_key IN (?3, ?4) ORDER BY source_key) AS s) AS __sources,
  (SELECT json_group_array(json_array(s.source_key, s.current_generation, s.updated_at, s.source_fingerprint,
                                      s.source_completeness, s.last_error_code, s.collection_id,
                                      s.source_updated_at, s.source_version, s.identity_version,
                                      s.revision_id, s.last_attempted_at))
   FROM (SELECT * FROM _emdash_media_usage_sources WHERE source_key IN (?3, ?4) ORDER BY source_key) AS s) AS __sources_sig
FROM (SELECT 1) AS __one
LEFT JOIN {table} AS e ON e.id = ?2
LEFT JOIN revisions AS r ON r.id = e.draft_revision_id
