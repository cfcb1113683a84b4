SELECT * FROM media WHERE id = ?1
