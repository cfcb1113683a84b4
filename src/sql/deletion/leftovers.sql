SELECT EXISTS (SELECT 1 FROM _emdash_media_usage_work WHERE collection_id = ?1) AS work,
       EXISTS (SELECT 1 FROM _emdash_media_usage_sources
               WHERE source_type = 'content' AND collection_id = ?1) AS sources,
       EXISTS (SELECT 1 FROM _emdash_media_usage WHERE source_key >= ?2 AND source_key < ?3) AS occurrences,
       EXISTS (SELECT 1 FROM revisions WHERE collection = ?4) AS revisions
