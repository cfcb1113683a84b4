-- A fragment: the entries with a file URL occurrence naming an earlier key of the media item ?2
-- after the cursor ?3, at most ?4 + 1 of them (one past the cap says a count is capped). An
-- entry is its source keys less their variant. Read by the linked-key index, a key at a time.
SELECT DISTINCT substr(u.source_key, 1, length(u.source_key) - CASE WHEN u.source_key LIKE '%:columns' THEN 7 ELSE 13 END)
FROM media_versions AS v INDEXED BY idx_media_versions_item
CROSS JOIN _emdash_media_usage AS u INDEXED BY idx__emdash_media_usage_linked_source
WHERE v.media_id = ?2 AND u.linked_key = v.storage_key AND u.source_key > ?3
LIMIT ?4 + 1
