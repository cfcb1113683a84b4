DELETE FROM _emdash_media_usage_work
WHERE rowid IN (SELECT rowid FROM _emdash_media_usage_work WHERE collection_id = ?1 ORDER BY content_id LIMIT ?4)
  AND {lease}
