INSERT INTO _emdash_media_usage_ticks (started_at, lane, outcome, statements, rows_written, duration_ms, details)
VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?1), ?2, ?3, ?4, ?5, ?6, ?7)
