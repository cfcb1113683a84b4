-- Fragment: the safe delete's rule, that a media item is not in use and that coverage proves it,
-- a conjunction that the single delete's guard, the permanent delete, the bulk trash and the
-- purge embed. The embedding statement fills in the item's id (a parameter, or its own row's
-- `media.id`) and the parameter bound to the deployed reference rules.
-- No current occurrence of a registered collection references the media ...
NOT EXISTS (SELECT 1 FROM _emdash_media_usage_current AS cur WHERE cur.media_id = {media_id})
-- ... nor does an entry too large to index (its failed work row lists the media it uses; the
-- list stays while the row is queued again, until a projection replaces or clears it). Only
-- the rows that have a list are read: the partial index, named so the planner cannot pick the
-- state index and read every failed row ...
AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage_work AS w INDEXED BY idx__emdash_media_usage_work_unindexed,
                  json_each(w.unindexed_media) AS j
                WHERE w.unindexed_media IS NOT NULL AND j.value = {media_id})
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
