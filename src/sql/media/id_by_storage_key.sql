-- The id of the media item whose file is the storage key ?1: its current file (the unique index
-- on media keys) or one of its versions (their primary key). A key names one file of one item.
SELECT id FROM media WHERE storage_key = ?1
UNION ALL
SELECT media_id AS id FROM media_versions WHERE storage_key = ?1
