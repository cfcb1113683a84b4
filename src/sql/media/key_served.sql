-- Whether the file route serves the object under the storage key ?1 (from the unique index on
-- it, and the versions' primary key): only while an uploaded media row names it (only an upload
-- sets content_hash: the worker stored that object, under a key it chose) and that row is outside
-- the trash, or while it is an uploaded earlier file of such a row (a version: the key names the
-- same bytes forever, so a page that still links it shows what it showed). A JSON registration of
-- the key never makes the object servable (whoever registers a key by JSON did not upload its
-- bytes, whatever the bucket holds under it); nor does a row in the trash, nor a deleted one (an
-- object whose delete is still to come, or failed and waits for the sweep).
SELECT EXISTS (
  SELECT 1 FROM media WHERE storage_key = ?1 AND content_hash IS NOT NULL AND deleted_at IS NULL
) OR EXISTS (
  SELECT 1 FROM media_versions AS v CROSS JOIN media AS m
  WHERE v.storage_key = ?1 AND v.content_hash IS NOT NULL AND m.id = v.media_id AND m.deleted_at IS NULL
) AS served
