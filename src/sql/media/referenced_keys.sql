-- Which of the storage keys ?1 (a JSON array) the storage sweep keeps: those an uploaded media row
-- names (only an upload sets content_hash), in the trash or not, and every version's key (an
-- item's earlier file: kept while its row exists; the version purge deletes the row first, then
-- the object). A JSON registration of a key keeps nothing: the worker did not store an object for
-- it.
SELECT k.value AS storage_key
FROM json_each(?1) AS k
WHERE EXISTS (SELECT 1 FROM media AS m WHERE m.storage_key = k.value AND m.content_hash IS NOT NULL)
   OR EXISTS (SELECT 1 FROM media_versions AS v WHERE v.storage_key = k.value)
