INSERT INTO revisions (id, collection, entry_id, data, base_version) VALUES (?1, ?2, ?3, ?4, ?5)
