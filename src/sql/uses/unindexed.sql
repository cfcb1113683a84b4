-- Fragment: the entries too large to index that use the media item {media_id}, an arm of both
-- relations (`uses/blocks_delete.sql`, `uses/counts_as_use.sql`) in their columns: the failed
-- work row of such an entry lists the media it uses (the list stays while the row is queued
-- again, until a projection replaces or clears it). Only the rows that have a list are read: the
-- partial index, named so the planner cannot pick the state index and read every failed row.
SELECT uw.collection_id, uw.collection_slug, uw.content_id, NULL AS content_slug, 0 AS indexed
FROM _emdash_media_usage_work AS uw INDEXED BY idx__emdash_media_usage_work_unindexed,
     json_each(uw.unindexed_media) AS ul
WHERE uw.unindexed_media IS NOT NULL AND ul.value = {media_id}
