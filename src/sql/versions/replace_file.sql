-- The media ?1 takes the newly uploaded file under the storage key ?2 (its type ?3, size ?4,
-- dimensions ?5 × ?6 and SHA-256 ?7), and the file name ?8 when one is given (NULL: kept). Its
-- id, alt text, caption, author and creation time are kept. Runs after its current file became a
-- version, in one guarded batch. The row as it is now.
UPDATE media
SET storage_key = ?2, mime_type = ?3, size = ?4, width = ?5, height = ?6, content_hash = ?7,
    filename = coalesce(?8, filename)
WHERE id = ?1
RETURNING *
