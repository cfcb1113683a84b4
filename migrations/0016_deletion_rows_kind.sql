-- Which kind of row of its phase a collection deletion is deleting (an index into the phase's
-- kinds: `work` deletes work rows then revisions, `sources` occurrences then sources), so the
-- cleanup batch size stored beside it (`cleanup_batch_rows`) is the one learned on that kind:
-- a batch grown on cheap rows never starts the next, heavier kind.
ALTER TABLE _emdash_media_usage_collection_deletions ADD COLUMN cleanup_rows_kind INTEGER NOT NULL DEFAULT 0;
