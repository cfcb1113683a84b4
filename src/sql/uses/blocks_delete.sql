-- Fragment: the relation "blocks a delete", the entries that use the media item {media_id} so
-- that deleting it would break them. Chosen wide: every current occurrence of a registered
-- collection, whatever the entry's state (an entry in the trash can be restored, a draft
-- published, and live media a draft supersedes is still served), and every entry too large to
-- index that lists it (`uses/unindexed.sql`). The safe delete's rule (`media/unused_and_proven.sql`),
-- the list's `usage=used|unused` filter, a refusal's `MEDIA_IN_USE` entries and the bulk delete's
-- `in_use` entries read it. A row per occurrence (an entry may come more than once):
-- `collection_id, collection_slug, content_id, content_slug` (NULL for an entry too large to
-- index) and `indexed` (0 for those). Each arm is read from its own index by the media id.
SELECT ucur.collection_id, ucur.collection_slug, ucur.content_id, ucur.content_slug, 1 AS indexed
FROM _emdash_media_usage_current AS ucur
WHERE ucur.media_id = {media_id}
UNION ALL
{unindexed_uses}
