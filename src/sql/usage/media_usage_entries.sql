-- The entries that block deleting the media item ?1 (`uses/blocks_delete.sql`): those whose
-- current projection references it, and those too large to index whose failed work row lists it
-- (`indexed` 0; an entry in both counts once), up to ?2, with how many there are.
SELECT collection_slug, content_id, content_slug, indexed, count(*) OVER () AS total
FROM (
  SELECT collection_slug, content_id, max(content_slug) AS content_slug, min(indexed) AS indexed
  FROM ({blocks_delete})
  GROUP BY collection_slug, content_id
)
ORDER BY collection_slug, content_id
LIMIT ?2
