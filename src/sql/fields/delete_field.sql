DELETE FROM _emdash_fields WHERE id = ?1 AND collection_id = ?2
