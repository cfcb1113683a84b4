-- Where the walk's next window of ?4 occurrences ends: the ?4th occurrence after (?1, ?2) in key
-- order, within the collection's key range (below ?3); none when fewer are left. Reads the
-- window from the occurrences' (source_key, id) index.
SELECT source_key, id
FROM _emdash_media_usage
WHERE (source_key, id) > (?1, ?2) AND source_key < ?3
ORDER BY source_key, id
LIMIT 1 OFFSET ?4 - 1
