DELETE FROM _emdash_batch_guard WHERE id = ?1
