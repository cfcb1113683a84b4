-- What the file route needs to know of the storage key ?1 (from the unique index on it): whether
-- an uploaded media row (only an upload sets content_hash) names it — the legacy rule for objects
-- stored before the storage marker existed — and whether a row outside the trash names it: the
-- file of an item in the trash, or of one deleted (its object not yet deleted, or left by a
-- failure for the storage sweep), is not served.
SELECT EXISTS (SELECT 1 FROM media WHERE storage_key = ?1 AND content_hash IS NOT NULL) AS uploaded,
       EXISTS (SELECT 1 FROM media WHERE storage_key = ?1 AND deleted_at IS NULL) AS live
