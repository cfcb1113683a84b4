-- Collections whose coverage was not proven under the deployed reference rules (?1) and that no
-- run under those rules is re-projecting: the tick starts a repair run for each. Coverage that
-- failed or never existed is left to the operator, as before. Reads one row per collection.
SELECT st.collection_id
FROM _emdash_media_usage_index_status AS st
JOIN _emdash_collections AS c ON c.id = st.collection_id AND c.slug = st.scope_key
WHERE st.adapter_id = 'content-media' AND st.scope_type = 'collection' AND st.capture_state = 'active'
  AND st.rules_version IS NOT ?1
  AND st.status NOT IN ('failed', 'never')
  AND NOT (st.status = 'running'
           AND EXISTS (SELECT 1 FROM _emdash_media_usage_reconciliations AS r
                       WHERE r.collection_id = st.collection_id AND r.run_token = st.cursor
                         AND r.rules_version = ?1))
ORDER BY st.collection_id
LIMIT 100
