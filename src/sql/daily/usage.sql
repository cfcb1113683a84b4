-- The rows the ticks of the UTC day ?1 (or the database's day) read and wrote so far.
SELECT d.day, COALESCE(u.rows_written, 0) AS rows_written, COALESCE(u.rows_read, 0) AS rows_read,
       COALESCE(u.ticks, 0) AS ticks
FROM (SELECT COALESCE(?1, strftime('%Y-%m-%d', 'now')) AS day) AS d
LEFT JOIN _emdash_media_usage_daily AS u ON u.day = d.day
