-- Media files stored in the MEDIA_BUCKET object store: one media row per content hash (an upload
-- of bytes already stored is answered with the existing row; the index makes that race-safe),
-- and where the storage sweep stands in the bucket listing.

CREATE UNIQUE INDEX idx_media_content_hash ON media (content_hash) WHERE content_hash IS NOT NULL;

CREATE TABLE _emdash_media_storage_sweep (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  -- The listing cursor of the pass in progress; NULL: the next pass starts from the first key.
  cursor TEXT,
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

INSERT INTO _emdash_media_storage_sweep (id) VALUES (1);
