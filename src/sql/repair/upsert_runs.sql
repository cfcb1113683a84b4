INSERT INTO _emdash_media_usage_reconciliations (collection_id, collection_slug, run_token, rules_version)
SELECT c.id, c.slug, lower(hex(randomblob(16))), ?2
FROM json_each(?1) AS j
JOIN _emdash_collections AS c ON c.id = j.value
JOIN _emdash_media_usage_index_status AS st
  ON st.adapter_id = 'content-media' AND st.scope_type = 'collection'
 AND st.collection_id = c.id AND st.scope_key = c.slug AND st.capture_state = 'active'
WHERE true
ON CONFLICT (collection_id) DO UPDATE SET
  collection_slug = excluded.collection_slug,
  run_token = excluded.run_token,
  rules_version = excluded.rules_version,
  phase = 'scan',
  scan_cursor = NULL,
  source_cursor = NULL,
  {reset_pending}
