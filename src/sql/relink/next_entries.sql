-- The next entries (at most ?3, after the cursor ?2) with a file URL occurrence naming one of the
-- earlier keys ?1 (a JSON array), in source-key order, with their collection and the last of
-- their sources that names one. Each key's occurrences are walked by the linked-key index one
-- source at a time (2 × ?3 sources a key at most: an entry has two), so what the walk reads grows
-- with the keys and the entries asked for, never with the item's other occurrences.
WITH RECURSIVE walk(linked_key, source_key, n) AS (
  SELECT k.value,
    (SELECT min(u.source_key) FROM _emdash_media_usage AS u INDEXED BY idx__emdash_media_usage_linked_source
     WHERE u.linked_key = k.value AND u.source_key > ?2),
    1
  FROM json_each(?1) AS k
  UNION ALL
  SELECT w.linked_key,
    (SELECT min(u.source_key) FROM _emdash_media_usage AS u INDEXED BY idx__emdash_media_usage_linked_source
     WHERE u.linked_key = w.linked_key AND u.source_key > w.source_key),
    w.n + 1
  FROM walk AS w
  WHERE w.source_key IS NOT NULL AND w.n < 2 * ?3
)
SELECT max(w.source_key) AS source_key, s.collection_id, s.collection_slug, s.content_id
FROM walk AS w
JOIN _emdash_media_usage_sources AS s ON s.source_key = w.source_key
GROUP BY s.collection_id, s.content_id
ORDER BY min(w.source_key)
LIMIT ?3
