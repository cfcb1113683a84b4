DELETE FROM _emdash_media_usage_sources WHERE source_key IN (SELECT value FROM json_each(?1))
