-- Whether the collection ?1 has a deletion of a field ?2 that has not finished.
SELECT field_id FROM _emdash_media_usage_field_deletions
WHERE collection_id = ?1 AND field_slug = ?2
LIMIT 1
