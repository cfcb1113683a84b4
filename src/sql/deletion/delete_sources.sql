DELETE FROM _emdash_media_usage_sources
WHERE rowid IN (SELECT rowid FROM _emdash_media_usage_sources
                WHERE source_type = 'content' AND collection_id = ?1
                ORDER BY source_key LIMIT ?4)
  AND {lease}
