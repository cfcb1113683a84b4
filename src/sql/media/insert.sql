-- Registers a media item; ?11 is its author (the token that registered or uploaded it; written
-- once, never changed).
INSERT INTO media (id, filename, mime_type, size, width, height, alt, storage_key, caption, content_hash, author_id)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
RETURNING *
