-- For each media id of the JSON array ?1, how many entries use it as summaries count uses
-- (EmDash's rule): entries outside the trash whose current projection uses it (the `eligible`
-- view: a draft's media, and a published entry's live media), and entries too large to index
-- that list it (whose trash state the index does not know: they count), each entry once. Each
-- count is read from the occurrence index by its media id.
SELECT j.value AS media_id, (
  SELECT count(*) FROM (
    SELECT collection_id, content_id
    FROM _emdash_media_usage_eligible
    WHERE media_id = j.value AND content_deleted_at IS NULL
    UNION
    SELECT w.collection_id, w.content_id
    FROM _emdash_media_usage_work AS w INDEXED BY idx__emdash_media_usage_work_unindexed, json_each(w.unindexed_media) AS m
    WHERE w.unindexed_media IS NOT NULL AND m.value = j.value)) AS n
FROM json_each(?1) AS j
