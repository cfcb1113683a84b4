-- Entries too large to index that reference a media item (their failed work rows list it), read
-- through the partial index of rows that have such a list.
SELECT w.collection_slug, w.content_id
FROM _emdash_media_usage_work AS w INDEXED BY idx__emdash_media_usage_work_unindexed, json_each(w.unindexed_media) AS m
WHERE w.unindexed_media IS NOT NULL AND m.value = ?1
ORDER BY w.collection_slug, w.content_id
LIMIT ?2
