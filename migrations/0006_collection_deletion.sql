-- Crash-safe collection deletion: one tombstone per collection being deleted. It names the exact
-- collection (id), reserves its slug until the deletion finishes (UNIQUE), and is the checkpoint
-- of a leased, retryable, multi-step cleanup: fence -> registry -> table (inside the DELETE
-- request) -> work -> sources -> status -> finalize (cron ticks).

CREATE TABLE _emdash_media_usage_collection_deletions (
  collection_id TEXT PRIMARY KEY,
  collection_slug TEXT NOT NULL UNIQUE,
  force_delete INTEGER NOT NULL DEFAULT 0 CHECK (force_delete IN (0, 1)),
  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'retry', 'leased', 'failed')),
  phase TEXT NOT NULL DEFAULT 'fence'
    CHECK (phase IN ('fence', 'registry', 'table', 'work', 'sources', 'status', 'finalize')),
  -- Cursor columns, kept for schema compatibility with EmDash. The cleanup here deletes the
  -- first N remaining rows in index order, so the deletion is its own progress and these stay
  -- NULL.
  work_cursor TEXT,
  source_key TEXT,
  occurrence_cursor TEXT,
  -- Rows per cleanup statement, carried from tick to tick as the batch adapts.
  cleanup_batch_rows INTEGER NOT NULL DEFAULT 50 CHECK (cleanup_batch_rows BETWEEN 1 AND 10000),
  attempt_count INTEGER NOT NULL DEFAULT 0 CHECK (attempt_count >= 0),
  next_attempt_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  lease_token TEXT,
  lease_expires_at TEXT,
  last_error_code TEXT,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  -- A row is leased exactly when it carries a lease.
  CHECK ((state = 'leased') = (lease_token IS NOT NULL AND lease_expires_at IS NOT NULL))
);

CREATE INDEX idx__emdash_media_usage_collection_deletions_due
  ON _emdash_media_usage_collection_deletions (state, next_attempt_at, updated_at, collection_id);
CREATE INDEX idx__emdash_media_usage_collection_deletions_lease
  ON _emdash_media_usage_collection_deletions (state, lease_expires_at, updated_at, collection_id);
CREATE INDEX idx__emdash_media_usage_collection_deletions_operator
  ON _emdash_media_usage_collection_deletions (state, updated_at, collection_id);
