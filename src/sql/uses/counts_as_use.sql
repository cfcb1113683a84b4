-- Fragment: the relation "counts as a use", the entries a summary counts as using the media item
-- {media_id} (EmDash's rule for its usage counts): entries outside the trash whose eligible
-- occurrences use it (the `_emdash_media_usage_eligible` view: a draft's media, and the live
-- media of an entry that is published or has no draft), and entries too large to index that list
-- it (`uses/unindexed.sql`; the index knows neither their trash state nor their variants: they
-- count). The item's `usage.count` and the list's `usage.count` and `usageCount` count it, each
-- entry once. The columns of `uses/blocks_delete.sql`, and a subset of its rows: an item nothing
-- blocks from deletion counts 0.
SELECT uel.collection_id, uel.collection_slug, uel.content_id, uel.content_slug, 1 AS indexed
FROM _emdash_media_usage_eligible AS uel
WHERE uel.media_id = {media_id} AND uel.content_deleted_at IS NULL
UNION ALL
{unindexed_uses}
