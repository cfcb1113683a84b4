-- What a repair run has left (each counted up to ?3): entries of its collection's table past the
-- scan cursor ?1 while it scans (phase ?4), and the collection's (?2) queued work.
SELECT (SELECT count(*) FROM (SELECT 1 FROM {table} WHERE ?4 = 'scan' AND id > coalesce(?1, '') LIMIT ?3)) AS entries,
       (SELECT count(*) FROM (SELECT 1 FROM _emdash_media_usage_work WHERE collection_id = ?2 LIMIT ?3)) AS queued
