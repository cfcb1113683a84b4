-- The deletion of field ?1 (slug ?4) of collection ?2 (slug ?3), whose column is now ?5: due now,
-- at `occurrences`, walking ?6 occurrences per statement at first.
INSERT INTO _emdash_media_usage_field_deletions
  (field_id, collection_id, collection_slug, field_slug, column_name, batch_rows)
VALUES (?1, ?2, ?3, ?4, ?5, ?6)
