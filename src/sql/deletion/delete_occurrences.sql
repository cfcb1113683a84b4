DELETE FROM _emdash_media_usage
WHERE rowid IN (SELECT rowid FROM _emdash_media_usage WHERE source_key >= ?5 AND source_key < ?6
                ORDER BY source_key, id LIMIT ?4)
  AND {lease}
