SELECT id, collection, entry_id, data, base_version FROM revisions WHERE id = ?1
