SELECT * FROM _emdash_media_usage_ticks
WHERE ?1 IS NULL OR id < ?1
ORDER BY id DESC
LIMIT ?2
