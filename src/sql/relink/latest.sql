-- The latest relink of the media item ?1.
SELECT * FROM _emdash_media_relinks
WHERE media_id = ?1
ORDER BY started_at DESC, id DESC
LIMIT 1
