-- Up to ?2 entries too large to index that reference the media item ?1 (`uses/unindexed.sql`:
-- their failed work rows list it), for "Used in", which lists the indexed ones by occurrence.
SELECT collection_slug, content_id
FROM ({unindexed_uses})
ORDER BY collection_slug, content_id
LIMIT ?2
