INSERT INTO _emdash_batch_guard (id)
SELECT CASE WHEN EXISTS (SELECT 1 FROM {table} WHERE id = ?2 AND version = ?3) THEN ?1 END
