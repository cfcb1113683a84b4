-- The media items that candidate strings name: by id (?1, ?2) and by storage key (?3, ?4), each a
-- JSON array of strings or NULL (two per kind, so an entry's live columns and its draft may each
-- bring a request's worth of strings). Answered from unique indexes; a string that names nothing
-- reads no row.
SELECT id, storage_key, mime_type FROM media
WHERE id IN (SELECT value FROM json_each(?1) UNION ALL SELECT value FROM json_each(?2))
UNION
SELECT id, storage_key, mime_type FROM media
WHERE storage_key IN (SELECT value FROM json_each(?3) UNION ALL SELECT value FROM json_each(?4))
