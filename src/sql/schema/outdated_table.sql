-- A collection whose content table is older than the table revision ?1 (the registry has a row
-- per collection, not per entry).
SELECT id, slug FROM _emdash_collections
WHERE table_revision < ?1
ORDER BY id
LIMIT 1
