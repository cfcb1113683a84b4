CREATE TRIGGER {trigger} AFTER {event} ON {table} FOR EACH ROW
BEGIN
  UPDATE _emdash_media_usage_index_status
  SET change_epoch = change_epoch + 1,
      completed_at = CASE WHEN status = 'complete' THEN NULL ELSE completed_at END,
      status = CASE WHEN status = 'complete' THEN 'stale' ELSE status END,
      updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
  WHERE adapter_id = 'content-media' AND scope_type = 'collection'
    AND scope_key = {slug} AND collection_id = {collection_id} AND capture_state = 'active'
    AND EXISTS (SELECT 1 FROM _emdash_collections WHERE id = {collection_id} AND slug = {slug});
  SELECT RAISE(ABORT, 'media usage capture inactive') WHERE changes() <> 1;
  INSERT INTO _emdash_media_usage_work (collection_id, content_id, collection_slug, change_epoch)
  VALUES (
    {collection_id}, {row}.id, {slug},
    (SELECT change_epoch FROM _emdash_media_usage_index_status
     WHERE adapter_id = 'content-media' AND scope_type = 'collection' AND collection_id = {collection_id})
  )
  {requeue_work},
    change_epoch = excluded.change_epoch;
END
