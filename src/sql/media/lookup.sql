-- The media items that candidate strings name: by id (?1, ?2) and by storage key (?3, ?4), each a
-- JSON array of strings or NULL (two per kind, so an entry's live columns and its draft may each
-- bring a request's worth of strings). A key names an item's current file or one of its earlier
-- files (`version` = 1: a file URL to a replaced file is still a use of the item; the type is the
-- version's). Answered from unique indexes; a string that names nothing reads no row.
SELECT id, storage_key, mime_type, 0 AS version FROM media
WHERE id IN (SELECT value FROM json_each(?1) UNION ALL SELECT value FROM json_each(?2))
UNION
SELECT id, storage_key, mime_type, 0 AS version FROM media
WHERE storage_key IN (SELECT value FROM json_each(?3) UNION ALL SELECT value FROM json_each(?4))
UNION
SELECT media_id AS id, storage_key, mime_type, 1 AS version FROM media_versions
WHERE storage_key IN (SELECT value FROM json_each(?3) UNION ALL SELECT value FROM json_each(?4))
