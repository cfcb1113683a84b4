-- Rows read and written are budgets. D1 bills (and the Free plan rations per UTC day) rows read
-- and rows written; ticks are bounded by both, and background work shares a daily budget of
-- rows written, kept here per UTC day.

-- What the ticks of each UTC day read and wrote (their log writes included). A tick's log write
-- adds to its day's row through the trigger below, so keeping the count costs no statement; the
-- rows of the newest 60 days are kept.
CREATE TABLE _emdash_media_usage_daily (
  day TEXT PRIMARY KEY CHECK (day GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'),
  rows_written INTEGER NOT NULL DEFAULT 0 CHECK (rows_written >= 0),
  rows_read INTEGER NOT NULL DEFAULT 0 CHECK (rows_read >= 0),
  ticks INTEGER NOT NULL DEFAULT 0 CHECK (ticks >= 0),
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

-- A tick's rows read (rows written were already logged) and the UTC day it counted against.
ALTER TABLE _emdash_media_usage_ticks ADD COLUMN rows_read INTEGER NOT NULL DEFAULT 0;
ALTER TABLE _emdash_media_usage_ticks ADD COLUMN budget_day TEXT;

CREATE TRIGGER _emdash_media_usage_ticks_daily
AFTER INSERT ON _emdash_media_usage_ticks
WHEN NEW.budget_day IS NOT NULL
BEGIN
  INSERT INTO _emdash_media_usage_daily (day, rows_written, rows_read, ticks)
  VALUES (NEW.budget_day, NEW.rows_written, NEW.rows_read, 1)
  ON CONFLICT (day) DO UPDATE SET
    rows_written = rows_written + excluded.rows_written,
    rows_read = rows_read + excluded.rows_read,
    ticks = ticks + 1,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now');
  DELETE FROM _emdash_media_usage_daily
  WHERE day < (SELECT day FROM _emdash_media_usage_daily ORDER BY day DESC LIMIT 1 OFFSET 59);
END;
