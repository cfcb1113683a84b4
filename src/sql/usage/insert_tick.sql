-- A tick's log row; its trigger adds its rows to its UTC day's row of the daily budget (?9, or
-- the database's day).
INSERT INTO _emdash_media_usage_ticks
  (started_at, lane, outcome, statements, rows_written, duration_ms, details, rows_read, budget_day)
VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?1), ?2, ?3, ?4, ?5, ?6, ?7, ?8,
        COALESCE(?9, strftime('%Y-%m-%d', 'now')))
