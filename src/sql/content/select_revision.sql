SELECT id, collection, entry_id, data FROM revisions WHERE id = ?1
