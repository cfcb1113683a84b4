-- For each id of the JSON array ?1: whether a media row has it, whether it is in the trash, and
-- up to ?2 entries that use it (as a JSON array of [collection, id, slug]).
SELECT j.value AS id,
  EXISTS (SELECT 1 FROM media WHERE media.id = j.value) AS found,
  EXISTS (SELECT 1 FROM media WHERE media.id = j.value AND media.deleted_at IS NOT NULL) AS trashed,
  (SELECT json_group_array(json_array(u.collection_slug, u.content_id, u.content_slug)) FROM (
     SELECT DISTINCT collection_slug, content_id, content_slug FROM _emdash_media_usage_current
     WHERE media_id = j.value LIMIT ?2) AS u) AS entries,
  EXISTS (SELECT 1 FROM _emdash_media_usage_work AS w INDEXED BY idx__emdash_media_usage_work_unindexed,
            json_each(w.unindexed_media) AS k
          WHERE w.unindexed_media IS NOT NULL AND k.value = j.value) AS unindexed_use
FROM json_each(?1) AS j
