-- Relinks: on an editor's request, the lane `relink` rewrites every file URL of an item's earlier
-- storage keys (its versions) in entries' live data and drafts to its current key, as ordinary
-- content writes. One row per request, leased like the index's other queues (`state` and the
-- lease columns as `repo::lease` writes them); at most one relink of an item is in progress.
--
-- The lane walks the item's file URL occurrences in source-key order from `cursor` (the entries
-- before it are done) and keeps the counters a status read shows, so that a read costs one row
-- whatever the size of the relink: `entries_left` was counted up to a cap when the relink
-- started (`entries_left_capped`: at least that many) and is taken down as entries are done,
-- counted again from the cursor when it reaches 0 while capped.
CREATE TABLE _emdash_media_relinks (
  id TEXT PRIMARY KEY,
  media_id TEXT NOT NULL,
  -- The editor's token id: the content writes are theirs.
  requested_by TEXT,
  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'retry', 'leased', 'failed')),
  attempt_count INTEGER NOT NULL DEFAULT 0,
  next_attempt_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  lease_token TEXT,
  lease_expires_at TEXT,
  last_error_code TEXT,
  cursor TEXT NOT NULL DEFAULT '',
  -- Writes of the entry at the cursor that lost to a concurrent edit in a row.
  conflict_attempts INTEGER NOT NULL DEFAULT 0 CHECK (conflict_attempts >= 0),
  entries_done INTEGER NOT NULL DEFAULT 0 CHECK (entries_done >= 0),
  entries_changed INTEGER NOT NULL DEFAULT 0 CHECK (entries_changed >= 0),
  -- Entries passed over after every attempt lost to a concurrent edit: never overwritten.
  entries_unsettled INTEGER NOT NULL DEFAULT 0 CHECK (entries_unsettled >= 0),
  conflicts INTEGER NOT NULL DEFAULT 0 CHECK (conflicts >= 0),
  entries_left INTEGER NOT NULL DEFAULT 0 CHECK (entries_left >= 0),
  entries_left_capped INTEGER NOT NULL DEFAULT 0 CHECK (entries_left_capped IN (0, 1)),
  started_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  -- Set when the walk ended (`done`) or the relink failed for good (`failed`).
  finished_at TEXT,
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

-- One relink of an item in progress at a time.
CREATE UNIQUE INDEX idx__emdash_media_relinks_active ON _emdash_media_relinks (media_id) WHERE finished_at IS NULL;
-- An item's relinks, latest last.
CREATE INDEX idx__emdash_media_relinks_item ON _emdash_media_relinks (media_id, started_at, id);
-- Relinks in progress, oldest first (the status), and those due or whose lease expired (the claim).
CREATE INDEX idx__emdash_media_relinks_progress ON _emdash_media_relinks (started_at, id) WHERE finished_at IS NULL;
CREATE INDEX idx__emdash_media_relinks_due ON _emdash_media_relinks (state, next_attempt_at, id) WHERE finished_at IS NULL;
CREATE INDEX idx__emdash_media_relinks_lease ON _emdash_media_relinks (state, lease_expires_at, id) WHERE finished_at IS NULL;
