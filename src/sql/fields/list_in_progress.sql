-- Field deletions that have not finished, oldest first (at most ?1).
SELECT * FROM _emdash_media_usage_field_deletions
ORDER BY created_at, field_id
LIMIT ?1
