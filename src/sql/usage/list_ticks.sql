-- Newest first, after the cursor ?1 (an id; NULL: from the newest): a search of the rowid.
SELECT * FROM _emdash_media_usage_ticks
WHERE id < coalesce(?1, 9223372036854775807)
ORDER BY id DESC
LIMIT ?2
