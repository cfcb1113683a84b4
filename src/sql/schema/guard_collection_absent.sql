INSERT INTO _emdash_batch_guard (id)
SELECT CASE
  WHEN NOT EXISTS (SELECT 1 FROM _emdash_collections WHERE slug = ?2)
   AND NOT EXISTS (SELECT 1 FROM sqlite_master WHERE name = ?3)
  THEN ?1
END
