-- Fragment: the safe delete's rule, that a media item is not in use and that coverage proves it,
-- a conjunction that the single delete's guard, the permanent delete, the bulk trash and the
-- purge embed. The embedding statement fills in the item's id (a parameter, or its own row's
-- `media.id`) and the parameter bound to the deployed reference rules.
-- Nothing blocks its delete (`uses/blocks_delete.sql`: no current occurrence of a registered
-- collection references it, nor does an entry too large to index) ...
NOT EXISTS ({blocks_delete})
-- ... and coverage proves it: every registered collection is complete, with nothing pending.
AND NOT EXISTS (
  SELECT 1
  FROM _emdash_collections AS c
  LEFT JOIN _emdash_media_usage_index_status AS st
    ON st.adapter_id = 'content-media' AND st.scope_type = 'collection'
   AND st.collection_id = c.id AND st.scope_key = c.slug
  WHERE st.status IS NOT 'complete' OR st.reconciliation_required <> 0 OR st.schema_version <> 1
    -- (proven under the deployed reference rules)
    OR st.rules_version IS NOT {rules})
