-- Relinks in progress, oldest first (at most ?1).
SELECT * FROM _emdash_media_relinks
WHERE finished_at IS NULL
ORDER BY started_at, id
LIMIT ?1
