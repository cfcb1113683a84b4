SELECT id FROM media WHERE storage_key = ?1
