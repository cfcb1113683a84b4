-- Which of the storage keys ?1 (a JSON array) an uploaded media row names (only an upload sets
-- content_hash), in the trash or not: the storage sweep keeps exactly their objects. A JSON
-- registration of a key keeps nothing: the worker did not store an object for it.
SELECT k.value AS storage_key
FROM json_each(?1) AS k
WHERE EXISTS (SELECT 1 FROM media AS m WHERE m.storage_key = k.value AND m.content_hash IS NOT NULL)
