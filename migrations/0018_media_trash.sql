-- The media trash: a deleted media item keeps its row and stored object, with `deleted_at` set,
-- until it is restored (cleared) or purged (row, then object) `MEDIA_TRASH_DAYS` later. The
-- usage index does not know about it: "Used in" still shows where a force-trashed item was used,
-- and a restored item needs no repair.
ALTER TABLE media ADD COLUMN deleted_at TEXT;

-- The library and the trash, each newest first (a page is searched from its cursor).
CREATE INDEX idx_media_library ON media (created_at, id) WHERE deleted_at IS NULL;
CREATE INDEX idx_media_trash ON media (created_at, id) WHERE deleted_at IS NOT NULL;
-- The purge, oldest trashed first.
CREATE INDEX idx_media_trashed_at ON media (deleted_at, id) WHERE deleted_at IS NOT NULL;
-- The list index is superseded by the two above.
DROP INDEX idx_media_list;
