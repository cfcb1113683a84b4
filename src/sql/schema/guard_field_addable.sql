INSERT INTO _emdash_batch_guard (id)
SELECT CASE
  WHEN EXISTS (SELECT 1 FROM _emdash_collections WHERE id = ?2 AND slug = ?3)
   AND NOT EXISTS (SELECT 1 FROM _emdash_fields WHERE collection_id = ?2 AND slug = ?4)
  THEN ?1
END
