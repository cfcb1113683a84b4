-- The media items that candidate strings name: by id (?1) and by storage key (?2), each a JSON
-- array of strings. Both are answered from unique indexes; a string that names nothing reads
-- no row.
SELECT id, storage_key, mime_type FROM media WHERE id IN (SELECT value FROM json_each(?1))
UNION
SELECT id, storage_key, mime_type FROM media WHERE storage_key IN (SELECT value FROM json_each(?2))
