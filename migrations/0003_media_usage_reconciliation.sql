-- Resumable index repair (reconciliation) runs: one per collection, advanced by cron ticks in
-- bounded steps: scan the entries into the work queue, queue sources whose entry is gone, then
-- wait for the queue to drain and finalise coverage under the run token.

CREATE TABLE _emdash_media_usage_reconciliations (
  collection_id TEXT PRIMARY KEY,
  collection_slug TEXT NOT NULL,
  run_token TEXT NOT NULL,
  phase TEXT NOT NULL DEFAULT 'scan',
  scan_cursor TEXT,
  source_cursor TEXT,
  state TEXT NOT NULL DEFAULT 'pending',
  attempt_count INTEGER NOT NULL DEFAULT 0,
  next_attempt_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  lease_token TEXT,
  lease_expires_at TEXT,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

CREATE INDEX idx__emdash_media_usage_reconciliations_due
  ON _emdash_media_usage_reconciliations (state, next_attempt_at, collection_id);
CREATE INDEX idx__emdash_media_usage_reconciliations_lease
  ON _emdash_media_usage_reconciliations (state, lease_expires_at, collection_id);
