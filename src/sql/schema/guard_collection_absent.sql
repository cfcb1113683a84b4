INSERT INTO _emdash_batch_guard (id)
SELECT CASE
  -- (A registered slug is refused by the registry's UNIQUE slug.)
  WHEN NOT EXISTS (SELECT 1 FROM sqlite_master WHERE name = ?3)
   -- The slug stays reserved until a deletion of a collection with this slug has finished.
   AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage_collection_deletions WHERE collection_slug = ?2)
  THEN ?1
END
