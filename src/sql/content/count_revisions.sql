-- How many revisions an entry has (its save prunes them to the configured count).
SELECT count(*) AS n FROM revisions WHERE collection = ?1 AND entry_id = ?2
