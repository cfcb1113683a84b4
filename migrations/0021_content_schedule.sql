-- Scheduled publishing: the entries whose `scheduled_at` is set, one row each, so the tick's
-- `schedule` lane finds the due ones by one index search instead of visiting every content table.
-- The content row is the truth; a row here mirrors its schedule: the schedule and unschedule
-- requests write both in one batch, a restore puts back the row of a scheduled entry, and the
-- lane drops a row once its entry no longer has that schedule (published, unscheduled, trashed,
-- deleted, or its collection gone). No entry had a schedule before this table: no request could
-- set `scheduled_at`.
CREATE TABLE _emdash_content_schedule (
  collection_id TEXT NOT NULL,
  content_id TEXT NOT NULL,
  collection_slug TEXT NOT NULL,
  -- The time the entry is to be published, in the database clock's format (UTC).
  scheduled_at TEXT NOT NULL,
  PRIMARY KEY (collection_id, content_id)
) WITHOUT ROWID;

-- Due schedules, earliest first (the lane's one search per step; an idle tick reads nothing).
CREATE INDEX idx__emdash_content_schedule_due ON _emdash_content_schedule (scheduled_at, collection_id, content_id);
