DELETE FROM _emdash_collections WHERE id = ?1 AND slug = ?2
