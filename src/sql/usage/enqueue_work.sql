INSERT INTO _emdash_media_usage_work (collection_id, content_id, collection_slug, change_epoch)
SELECT ?1, i.value, ?2,
       (SELECT change_epoch FROM _emdash_media_usage_index_status
        WHERE adapter_id = 'content-media' AND scope_type = 'collection' AND collection_id = ?1)
FROM json_each(?3) AS i
WHERE true
{requeue_work},
  change_epoch = excluded.change_epoch
