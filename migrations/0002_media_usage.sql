-- The media usage index: sources, occurrences, coverage status, durable work queue, tick log.

CREATE TABLE _emdash_media_usage_sources (
  source_key TEXT PRIMARY KEY,
  source_type TEXT NOT NULL DEFAULT 'content',
  collection_id TEXT,
  collection_slug TEXT NOT NULL,
  content_id TEXT NOT NULL,
  source_variant TEXT NOT NULL,
  locale TEXT,
  translation_group TEXT,
  content_slug TEXT,
  content_title TEXT,
  content_status TEXT,
  content_scheduled_at TEXT,
  content_deleted_at TEXT,
  revision_id TEXT,
  current_generation TEXT,
  schema_version INTEGER NOT NULL DEFAULT 1,
  source_updated_at TEXT,
  source_version INTEGER,
  source_fingerprint TEXT,
  identity_version INTEGER,
  source_completeness TEXT NOT NULL DEFAULT 'unknown',
  last_attempted_at TEXT,
  last_error_code TEXT,
  indexed_at TEXT,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

CREATE INDEX idx__emdash_media_usage_sources_content ON _emdash_media_usage_sources (source_type, collection_slug, content_id);
CREATE INDEX idx__emdash_media_usage_sources_identity ON _emdash_media_usage_sources (source_type, collection_id, content_id, source_variant);
CREATE INDEX idx__emdash_media_usage_sources_completeness ON _emdash_media_usage_sources (collection_id, source_completeness);
CREATE INDEX idx__emdash_media_usage_sources_collection_cursor ON _emdash_media_usage_sources (source_type, collection_id, source_key);
CREATE INDEX idx__emdash_media_usage_sources_fingerprint ON _emdash_media_usage_sources (source_fingerprint);

CREATE TABLE _emdash_media_usage (
  id TEXT PRIMARY KEY,
  source_key TEXT NOT NULL,
  generation TEXT NOT NULL,
  field_slug TEXT NOT NULL,
  field_path TEXT NOT NULL,
  occurrence_index INTEGER NOT NULL DEFAULT 0,
  reference_type TEXT NOT NULL,
  media_id TEXT,
  provider TEXT NOT NULL DEFAULT 'local',
  provider_asset_id TEXT NOT NULL,
  media_kind TEXT,
  mime_type TEXT,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  UNIQUE (source_key, generation, field_path, occurrence_index)
);

CREATE INDEX idx__emdash_media_usage_provider_asset ON _emdash_media_usage (provider, provider_asset_id);
CREATE INDEX idx__emdash_media_usage_media_source_generation ON _emdash_media_usage (media_id, source_key, generation);
CREATE INDEX idx__emdash_media_usage_source_cursor ON _emdash_media_usage (source_key, id);

-- A source's occurrences are exactly its current generation: replacing the generation or
-- deleting the source removes the superseded rows in the same statement (and so in the same
-- atomic batch). A source holds at most the admission limit of occurrences, so this is bounded.
CREATE TRIGGER _emdash_media_usage_sources_superseded
AFTER UPDATE OF current_generation ON _emdash_media_usage_sources
WHEN OLD.current_generation IS NOT NULL AND OLD.current_generation IS NOT NEW.current_generation
BEGIN
  DELETE FROM _emdash_media_usage WHERE source_key = OLD.source_key AND generation = OLD.current_generation;
END;

CREATE TRIGGER _emdash_media_usage_sources_deleted
AFTER DELETE ON _emdash_media_usage_sources
BEGIN
  DELETE FROM _emdash_media_usage WHERE source_key = OLD.source_key;
END;

CREATE TABLE _emdash_media_usage_index_status (
  adapter_id TEXT NOT NULL DEFAULT 'content-media',
  scope_type TEXT NOT NULL DEFAULT 'collection',
  scope_key TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'never',
  schema_version INTEGER NOT NULL DEFAULT 1,
  started_at TEXT,
  completed_at TEXT,
  cursor TEXT,
  indexed_source_count INTEGER NOT NULL DEFAULT 0,
  failed_source_count INTEGER NOT NULL DEFAULT 0,
  last_error_code TEXT,
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  collection_id TEXT,
  change_epoch INTEGER NOT NULL DEFAULT 0,
  reconciliation_required INTEGER NOT NULL DEFAULT 0,
  last_incremental_success_at TEXT,
  capture_state TEXT,
  PRIMARY KEY (adapter_id, scope_type, scope_key)
);

CREATE UNIQUE INDEX idx__emdash_media_usage_index_status_collection ON _emdash_media_usage_index_status (adapter_id, scope_type, collection_id);
CREATE INDEX idx__emdash_media_usage_index_status_status ON _emdash_media_usage_index_status (adapter_id, status);

CREATE TABLE _emdash_media_usage_work (
  collection_id TEXT NOT NULL,
  content_id TEXT NOT NULL,
  collection_slug TEXT NOT NULL,
  change_epoch INTEGER NOT NULL DEFAULT 0,
  work_version INTEGER NOT NULL DEFAULT 1,
  state TEXT NOT NULL DEFAULT 'pending',
  attempt_count INTEGER NOT NULL DEFAULT 0,
  next_attempt_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  lease_token TEXT,
  lease_expires_at TEXT,
  last_attempted_at TEXT,
  last_error_code TEXT,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  PRIMARY KEY (collection_id, content_id)
);

CREATE INDEX idx__emdash_media_usage_work_due ON _emdash_media_usage_work (state, next_attempt_at, updated_at, collection_id, content_id);
CREATE INDEX idx__emdash_media_usage_work_lease ON _emdash_media_usage_work (state, lease_expires_at, collection_id, content_id);
CREATE INDEX idx__emdash_media_usage_work_operator ON _emdash_media_usage_work (collection_id, state, updated_at, content_id);

CREATE TABLE _emdash_media_usage_ticks (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  started_at TEXT NOT NULL,
  lane TEXT NOT NULL,
  outcome TEXT NOT NULL,
  statements INTEGER NOT NULL,
  rows_written INTEGER NOT NULL,
  duration_ms INTEGER NOT NULL,
  details TEXT
);

-- Keep the newest 1,000 ticks; pruning rides on the insert so a tick's log write is one statement.
CREATE TRIGGER _emdash_media_usage_ticks_prune
AFTER INSERT ON _emdash_media_usage_ticks
BEGIN
  DELETE FROM _emdash_media_usage_ticks WHERE id <= NEW.id - 1000;
END;
