-- The versions of the media ?1, newest first: at most ?2 rows (the caller asks one more than it
-- shows, to know there are more), each with `linked`: how many entries of a registered
-- collection have a current occurrence naming its key (`linked_key`: a file URL to that
-- version), counted up to ?3. Read from the versions' index by item, and from the occurrences'
-- partial index by linked key.
SELECT v.storage_key, v.filename, v.mime_type, v.size, v.width, v.height, v.content_hash, v.replaced_at,
  v.replaced_by,
  (SELECT count(*) FROM (
     SELECT DISTINCT s.collection_id, s.content_id
     FROM _emdash_media_usage AS u INDEXED BY idx__emdash_media_usage_linked_source
     CROSS JOIN _emdash_media_usage_sources AS s
     CROSS JOIN _emdash_collections AS c
     WHERE u.linked_key = v.storage_key
       AND s.source_key = u.source_key AND s.current_generation = u.generation
       AND c.id = s.collection_id AND c.slug = s.collection_slug
     LIMIT ?3)) AS linked
FROM media_versions AS v INDEXED BY idx_media_versions_item
WHERE v.media_id = ?1
ORDER BY v.replaced_at DESC, v.storage_key DESC
LIMIT ?2
