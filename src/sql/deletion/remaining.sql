-- How many rows of each kind a deletion has left (each counted up to ?5, so a status read of a
-- huge deletion stays bounded): queued work of ?1, revisions of the slug ?4, source rows of ?1
-- and occurrences in its key range [?2, ?3).
SELECT (SELECT count(*) FROM (SELECT 1 FROM _emdash_media_usage_work WHERE collection_id = ?1 LIMIT ?5)) AS work,
       (SELECT count(*) FROM (SELECT 1 FROM revisions WHERE collection = ?4 LIMIT ?5)) AS revisions,
       (SELECT count(*) FROM (SELECT 1 FROM _emdash_media_usage_sources
                              WHERE source_type = 'content' AND collection_id = ?1 LIMIT ?5)) AS sources,
       (SELECT count(*) FROM (SELECT 1 FROM _emdash_media_usage
                              WHERE source_key >= ?2 AND source_key < ?3 LIMIT ?5)) AS occurrences
