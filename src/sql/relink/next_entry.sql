-- The next source (after the cursor ?2) with a file URL occurrence of the media item ?1, and
-- its entry.
SELECT u.source_key, s.collection_id, s.collection_slug, s.content_id
FROM _emdash_media_usage AS u
JOIN _emdash_media_usage_sources AS s ON s.source_key = u.source_key
WHERE u.media_id = ?1 AND u.source_key > ?2 AND u.reference_type = 'embedded_url'
ORDER BY u.source_key
LIMIT 1
