-- For each media id of the JSON array ?1, how many entries count as using it, as summaries count
-- uses (`uses/counts_as_use.sql`, EmDash's rule: entries in the trash do not count), each entry
-- once. Each count is read from the indexes by its media id.
SELECT j.value AS media_id, (
  SELECT count(*) FROM (SELECT DISTINCT collection_id, content_id FROM ({counts_as_use}))) AS n
FROM json_each(?1) AS j
