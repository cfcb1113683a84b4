-- Whether a media row that was uploaded (only an upload sets content_hash; a JSON registration
-- never does) has the storage key ?1: the file route's legacy rule for objects stored before the
-- storage marker existed. Answered from the unique index on storage_key.
SELECT EXISTS (
  SELECT 1 FROM media WHERE storage_key = ?1 AND content_hash IS NOT NULL
) AS uploaded
