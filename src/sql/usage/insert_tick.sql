-- A tick's log row; its trigger adds its rows to the database's UTC day's row of the daily
-- budget (the day is never taken from the tick's event).
INSERT INTO _emdash_media_usage_ticks
  (started_at, lane, outcome, statements, rows_written, duration_ms, details, rows_read, budget_day)
VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?1), ?2, ?3, ?4, ?5, ?6, ?7, ?8, strftime('%Y-%m-%d', 'now'))
