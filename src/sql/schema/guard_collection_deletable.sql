INSERT INTO _emdash_batch_guard (id)
SELECT CASE
  WHEN EXISTS (SELECT 1 FROM _emdash_collections WHERE id = ?2 AND slug = ?3)
   AND (?4 = 1 OR NOT EXISTS (SELECT 1 FROM {table} WHERE deleted_at IS NULL))
  THEN ?1
END
