-- Deleting (and updating) a collection's field.
--
-- A field's deletion is one guarded batch in the DELETE request: the field leaves the registry,
-- its column is renamed out of reach (`_deleted_<32 hex>`, a name no field can have, so no
-- content write can store data in it from then on) and this row is written. Cron ticks then
-- remove the field's occurrences from the usage index (phase `occurrences`: a walk of the
-- collection's occurrences in key order, from `cursor_key`/`cursor_id`, deleting those whose
-- `field_slug` is the field's) and drop the renamed column (phase `column`), then delete the row.
-- While a row is at `occurrences`, no statement marks its collection's coverage complete.
-- Leased like the other queues (`state`, `lease_token`, `lease_expires_at`, `attempt_count`,
-- `next_attempt_at`, `updated_at`).

CREATE TABLE _emdash_media_usage_field_deletions (
  field_id TEXT PRIMARY KEY,
  collection_id TEXT NOT NULL,
  collection_slug TEXT NOT NULL,
  field_slug TEXT NOT NULL,
  -- The field's column under its new name, until it is dropped.
  column_name TEXT NOT NULL UNIQUE,
  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'retry', 'leased', 'failed')),
  phase TEXT NOT NULL DEFAULT 'occurrences' CHECK (phase IN ('occurrences', 'column')),
  -- The last occurrence the walk passed (its source key and id); NULL before the first.
  cursor_key TEXT,
  cursor_id TEXT,
  -- Occurrences per walk statement, carried from tick to tick as the batch adapts.
  batch_rows INTEGER NOT NULL DEFAULT 50 CHECK (batch_rows BETWEEN 1 AND 10000),
  attempt_count INTEGER NOT NULL DEFAULT 0 CHECK (attempt_count >= 0),
  next_attempt_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  lease_token TEXT,
  lease_expires_at TEXT,
  last_error_code TEXT,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  -- A row is leased exactly when it carries a lease.
  CHECK ((state = 'leased') = (lease_token IS NOT NULL AND lease_expires_at IS NOT NULL)),
  CHECK ((cursor_key IS NULL) = (cursor_id IS NULL))
);

CREATE INDEX idx__emdash_media_usage_field_deletions_due
  ON _emdash_media_usage_field_deletions (state, next_attempt_at, updated_at, field_id);
CREATE INDEX idx__emdash_media_usage_field_deletions_lease
  ON _emdash_media_usage_field_deletions (state, lease_expires_at, updated_at, field_id);
-- A collection's deletions by phase (the coverage statements' look), and a field's by slug (a
-- retried DELETE).
CREATE INDEX idx__emdash_media_usage_field_deletions_collection
  ON _emdash_media_usage_field_deletions (collection_id, phase, field_slug);

-- A collection's field epoch: how many of its fields were deleted. A projection's fingerprint
-- includes it (when not 0), so the sources whose occurrences a deletion's walk removed, whose
-- stored fingerprints still name the projection before it, are never taken for unchanged.
ALTER TABLE _emdash_collections ADD COLUMN field_epoch INTEGER NOT NULL DEFAULT 0;

-- What a field update (EmDash's `PUT …/fields/{field}`) may set besides label, type, required,
-- validation and sort order: the widget options (JSON text), and when it last changed.
ALTER TABLE _emdash_fields ADD COLUMN options TEXT;
ALTER TABLE _emdash_fields ADD COLUMN updated_at TEXT;
