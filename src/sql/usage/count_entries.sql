-- Non-trashed entries whose current projection uses the media, and entries too large to index
-- that list it (whose trash state the index does not know: they count), each once.
SELECT count(*) AS n FROM (
  SELECT collection_id, content_id
  FROM _emdash_media_usage_eligible
  WHERE media_id = ?1 AND content_deleted_at IS NULL
  UNION
  SELECT w.collection_id, w.content_id
  FROM _emdash_media_usage_work AS w INDEXED BY idx__emdash_media_usage_work_unindexed, json_each(w.unindexed_media) AS m
  WHERE w.unindexed_media IS NOT NULL AND m.value = ?1
)
