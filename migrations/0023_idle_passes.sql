-- Where the media trash's purge and the storage sweep stand between ticks, so that an idle tick
-- costs what an empty site's does.
--
-- The purge walks the trash in (deleted_at, id) order from its cursor, a batch per step, tick
-- after tick, so items still in use never keep the ones behind them from their turn; when a pass
-- reaches the end of the due items it starts over from the oldest, at the earliest at
-- `next_pass_at` (the pass period after the last pass ended; NULL: due now).

CREATE TABLE _emdash_media_purge (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  -- The last trashed item the pass in progress examined; NULL: the pass starts at the oldest.
  cursor_deleted_at TEXT,
  cursor_id TEXT,
  -- When the next pass may start (the database clock); NULL: at once.
  next_pass_at TEXT,
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  CHECK ((cursor_deleted_at IS NULL) = (cursor_id IS NULL))
);

INSERT INTO _emdash_media_purge (id) VALUES (1);

-- The storage sweep rests between passes: once a pass ends, the next starts no earlier than
-- this time (milliseconds since the epoch, on the object store's clock, the one objects' ages are
-- read by); NULL: at once.
ALTER TABLE _emdash_media_storage_sweep ADD COLUMN next_pass_ms REAL;
