-- Replacing a media item's file: the new bytes get a new storage key (keys are immutable, so the
-- file route's year-long immutable caching stays true) and the item keeps its id. The keys it had
-- before are its versions, newest first by `replaced_at`. A storage key names one file of one
-- item: no version has the key of a media row or of another version.

CREATE TABLE media_versions (
  storage_key TEXT PRIMARY KEY,
  media_id TEXT NOT NULL,
  filename TEXT NOT NULL,
  mime_type TEXT NOT NULL,
  size INTEGER,
  width INTEGER,
  height INTEGER,
  -- Set when the worker uploaded the version's bytes (as on `media`): only then is its object
  -- the worker's to serve and to delete.
  content_hash TEXT,
  -- When the file stopped being the item's current one, and who replaced it.
  replaced_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  replaced_by TEXT
);

-- An item's versions, newest first.
CREATE INDEX idx_media_versions_item ON media_versions (media_id, replaced_at, storage_key);
-- The versions in the order they become due for the purge.
CREATE INDEX idx_media_versions_replaced ON media_versions (replaced_at, storage_key);

CREATE TRIGGER media_versions_key_unique
BEFORE INSERT ON media_versions
WHEN EXISTS (SELECT 1 FROM media WHERE storage_key = NEW.storage_key AND id IS NOT NEW.media_id)
BEGIN
  SELECT RAISE(ABORT, 'UNIQUE constraint failed: media_versions.storage_key');
END;

CREATE TRIGGER media_key_not_a_version_insert
BEFORE INSERT ON media
WHEN EXISTS (SELECT 1 FROM media_versions WHERE storage_key = NEW.storage_key)
BEGIN
  SELECT RAISE(ABORT, 'UNIQUE constraint failed: media.storage_key');
END;

CREATE TRIGGER media_key_not_a_version_update
BEFORE UPDATE OF storage_key ON media
WHEN EXISTS (SELECT 1 FROM media_versions WHERE storage_key = NEW.storage_key AND media_id IS NOT NEW.id)
BEGIN
  SELECT RAISE(ABORT, 'UNIQUE constraint failed: media.storage_key');
END;

-- The storage key a file URL occurrence names (`embedded_url`; NULL for every other kind): the
-- item's current key or one of its versions. A version is linked while an occurrence names its
-- key. Until now an item had one key, so every URL occurrence named its item's current key.
ALTER TABLE _emdash_media_usage ADD COLUMN linked_key TEXT;

UPDATE _emdash_media_usage
SET linked_key = (SELECT m.storage_key FROM media AS m WHERE m.id = _emdash_media_usage.media_id)
WHERE reference_type = 'embedded_url' AND media_id IS NOT NULL;

CREATE INDEX idx__emdash_media_usage_linked_key ON _emdash_media_usage (linked_key)
WHERE linked_key IS NOT NULL;
