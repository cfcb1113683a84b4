DELETE FROM revisions WHERE collection = ?1 AND entry_id = ?2
