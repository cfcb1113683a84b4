INSERT INTO revisions (id, collection, entry_id, data) VALUES (?1, ?2, ?3, ?4)
