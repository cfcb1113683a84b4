-- Collections whose coverage was not proven under the deployed reference rules (?1) and that no
-- run under those rules is re-projecting: the tick starts a repair run for each. Coverage that
-- failed or never existed is left to the operator, as before.
--
-- The coverage rows under other rules are found by two range searches of the rules index (below
-- and above ?1; a partial index of active collections' rows): rows proven under the deployed
-- rules and rows of collections being deleted are never visited, so the look an idle tick takes
-- reads the same few rows however many collections there are or are being deleted, and a row or
-- two more per collection it returns. The first 100 are returned in the index's order (no sort:
-- a later tick starts the rest).
WITH outdated AS (
  SELECT * FROM (
    SELECT collection_id, scope_key, status, cursor
    FROM _emdash_media_usage_index_status INDEXED BY idx__emdash_media_usage_index_status_rules
    WHERE adapter_id = 'content-media' AND scope_type = 'collection' AND capture_state = 'active'
      AND rules_version < ?1)
  UNION ALL
  SELECT * FROM (
    SELECT collection_id, scope_key, status, cursor
    FROM _emdash_media_usage_index_status INDEXED BY idx__emdash_media_usage_index_status_rules
    WHERE adapter_id = 'content-media' AND scope_type = 'collection' AND capture_state = 'active'
      AND rules_version > ?1))
SELECT st.collection_id
FROM outdated AS st
JOIN _emdash_collections AS c ON c.id = st.collection_id AND c.slug = st.scope_key
WHERE st.status NOT IN ('failed', 'never')
  AND NOT (st.status = 'running'
           AND EXISTS (SELECT 1 FROM _emdash_media_usage_reconciliations AS r
                       WHERE r.collection_id = st.collection_id AND r.run_token = st.cursor
                         AND r.rules_version = ?1))
LIMIT 100
