-- Deletes each media of the JSON array ?1 in the trash for more than ?2 days (not restored, nor
-- trashed again, meanwhile) that nothing uses, by the safe delete's rule (?3: the deployed
-- reference rules): an item force-trashed while in use, or one a content write started using as
-- it was trashed, stays in the trash (its "Used in" says where) until restored or deleted for
-- good by an admin. The rows deleted, for their stored objects.
DELETE FROM media
WHERE id IN (SELECT value FROM json_each(?1))
  AND deleted_at IS NOT NULL AND deleted_at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || ?2 || ' days')
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
      OR st.rules_version IS NOT ?3)
RETURNING id, storage_key, content_hash
