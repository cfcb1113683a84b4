-- The entries that use a media item: those whose current projection references it, and those
-- too large to index whose failed work row lists it (`indexed` 0; an entry in both counts once).
SELECT collection_slug, content_id, content_slug, indexed, count(*) OVER () AS total
FROM (
  SELECT collection_slug, content_id, max(content_slug) AS content_slug, min(indexed) AS indexed
  FROM (
    SELECT collection_slug, content_id, content_slug, 1 AS indexed
    FROM _emdash_media_usage_current
    WHERE media_id = ?1
    UNION ALL
    SELECT w.collection_slug, w.content_id, NULL, 0
    FROM _emdash_media_usage_work AS w INDEXED BY idx__emdash_media_usage_work_unindexed, json_each(w.unindexed_media) AS m
    WHERE w.unindexed_media IS NOT NULL AND m.value = ?1
  )
  GROUP BY collection_slug, content_id
)
ORDER BY collection_slug, content_id
LIMIT ?2
