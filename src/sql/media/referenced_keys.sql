-- Which of the storage keys ?1 (a JSON array) a media row references.
SELECT k.value AS storage_key
FROM json_each(?1) AS k
WHERE EXISTS (SELECT 1 FROM media AS m WHERE m.storage_key = k.value)
