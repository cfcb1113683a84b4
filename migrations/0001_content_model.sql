-- Content model, media library, API tokens and the batch-guard table.
-- Timestamps are TEXT in the database clock's format: strftime('%Y-%m-%dT%H:%M:%fZ','now').

CREATE TABLE _emdash_collections (
  id TEXT PRIMARY KEY,
  slug TEXT NOT NULL UNIQUE,
  label TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

CREATE TABLE _emdash_fields (
  id TEXT PRIMARY KEY,
  collection_id TEXT NOT NULL REFERENCES _emdash_collections (id) ON DELETE CASCADE,
  slug TEXT NOT NULL,
  label TEXT NOT NULL,
  type TEXT NOT NULL,
  column_type TEXT NOT NULL,
  required INTEGER NOT NULL DEFAULT 0,
  validation TEXT,
  sort_order INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  UNIQUE (collection_id, slug)
);

CREATE TABLE revisions (
  id TEXT PRIMARY KEY,
  collection TEXT NOT NULL,
  entry_id TEXT NOT NULL,
  data TEXT NOT NULL,
  author_id TEXT,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

CREATE INDEX idx_revisions_entry ON revisions (collection, entry_id);

CREATE TABLE media (
  id TEXT PRIMARY KEY,
  filename TEXT NOT NULL,
  mime_type TEXT NOT NULL,
  size INTEGER,
  width INTEGER,
  height INTEGER,
  alt TEXT,
  caption TEXT,
  storage_key TEXT NOT NULL UNIQUE,
  status TEXT NOT NULL DEFAULT 'ready',
  content_hash TEXT,
  author_id TEXT,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

CREATE INDEX idx_media_list ON media (created_at, id);

CREATE TABLE _emdash_api_tokens (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  token_hash TEXT NOT NULL UNIQUE,
  role INTEGER NOT NULL,
  scopes TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

-- Guarded batches insert a token here only when their preconditions hold; a NULL aborts the
-- whole batch through this NOT NULL constraint. Always empty between batches.
CREATE TABLE _emdash_batch_guard (
  id TEXT NOT NULL PRIMARY KEY
);
