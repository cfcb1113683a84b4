SELECT * FROM media WHERE content_hash = ?1
