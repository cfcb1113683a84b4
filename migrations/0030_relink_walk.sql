-- A relink walks the file URL occurrences of each earlier key of its item in source-key order
-- (`relink/next_entries.sql`), a source at a time, so the index on the occurrences' linked key
-- carries their source key too. It replaces the one on the linked key alone: an occurrence still
-- writes one entry in it, and lookups by key read it as before.
DROP INDEX idx__emdash_media_usage_linked_key;
CREATE INDEX idx__emdash_media_usage_linked_source ON _emdash_media_usage (linked_key, source_key)
WHERE linked_key IS NOT NULL;
