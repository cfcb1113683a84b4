INSERT INTO media (id, filename, mime_type, size, width, height, alt, storage_key, caption, content_hash)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
RETURNING *
