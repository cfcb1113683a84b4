-- Moves to the trash, in one statement, each media of the JSON array ?1 that is not in use, when
-- coverage proves it: the predicates of the safe delete's guard (`guard_media_unused.sql`),
-- per item (?2: the deployed reference rules). A content write that starts using an item is
-- ordered before or after this statement: before, and its occurrence (or its pending work, which
-- makes coverage incomplete) refuses the item; after, and the item was unused when trashed — the
-- write's projection then records a use of a trashed item, which "Used in" shows. The ids moved.
UPDATE media SET deleted_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE id IN (SELECT value FROM json_each(?1))
  AND deleted_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage_current AS cur WHERE cur.media_id = media.id)
  AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage_work AS w INDEXED BY idx__emdash_media_usage_work_unindexed,
                    json_each(w.unindexed_media) AS j
                  WHERE w.unindexed_media IS NOT NULL AND j.value = media.id)
  AND NOT EXISTS (
    SELECT 1
    FROM _emdash_collections AS c
    LEFT JOIN _emdash_media_usage_index_status AS st
      ON st.adapter_id = 'content-media' AND st.scope_type = 'collection'
     AND st.collection_id = c.id AND st.scope_key = c.slug
    WHERE st.status IS NOT 'complete' OR st.reconciliation_required <> 0 OR st.schema_version <> 1
      OR st.rules_version IS NOT ?2)
RETURNING id
