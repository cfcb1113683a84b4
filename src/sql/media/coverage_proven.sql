-- Fragment: coverage proves the index complete: every registered collection is complete, with
-- nothing pending, under the deployed reference rules (the embedding statement fills in the
-- parameter bound to them). The safe delete's rule (`unused_and_proven.sql`) and the versions'
-- purge (`versions/purge.sql`) embed it.
NOT EXISTS (
  SELECT 1
  FROM _emdash_collections AS c
  LEFT JOIN _emdash_media_usage_index_status AS st
    ON st.adapter_id = 'content-media' AND st.scope_type = 'collection'
   AND st.collection_id = c.id AND st.scope_key = c.slug
  WHERE st.status IS NOT 'complete' OR st.reconciliation_required <> 0 OR st.schema_version <> 1
    -- (proven under the deployed reference rules)
    OR st.rules_version IS NOT {rules})
