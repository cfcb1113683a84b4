-- Re-queues the entries whose file URLs may now name a different media item: those whose URLs
-- named the storage key ?1 when no media item had it (a registration under that key), and those
-- whose URLs named the media item ?2 (being deleted: its key may be registered again). Reads
-- only sources with such links (a partial index, and the occurrences' media index). Not the entries
-- of a collection being deleted (from its fence on): its sources stay until its deletion removes
-- them, and work queued for them would be left behind that deletion's cleanup.
INSERT INTO _emdash_media_usage_work (collection_id, content_id, collection_slug, change_epoch)
SELECT t.collection_id, t.content_id, t.collection_slug,
       (SELECT st.change_epoch FROM _emdash_media_usage_index_status AS st
        WHERE st.adapter_id = 'content-media' AND st.scope_type = 'collection'
          AND st.collection_id = t.collection_id)
FROM (
  SELECT s.collection_id, s.content_id, s.collection_slug
  FROM _emdash_media_usage_sources AS s INDEXED BY idx__emdash_media_usage_sources_pending
  WHERE ?1 IS NOT NULL AND s.pending_keys IS NOT NULL
    AND EXISTS (SELECT 1 FROM json_each(s.pending_keys) AS k WHERE k.value = ?1)
  UNION
  SELECT s.collection_id, s.content_id, s.collection_slug
  FROM _emdash_media_usage AS u
  CROSS JOIN _emdash_media_usage_sources AS s
  WHERE ?2 IS NOT NULL AND u.media_id = ?2 AND u.reference_type = 'embedded_url'
    AND s.source_key = u.source_key AND s.current_generation = u.generation
) AS t
WHERE t.collection_id IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage_collection_deletions AS d WHERE d.collection_id = t.collection_id)
{requeue_work}
