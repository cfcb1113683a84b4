-- A page of non-trashed entries, newest first: at most ?5 rows, and no more rows once the page
-- holds ?6 bytes of field values (the row that crosses it is the last), so a page of large
-- entries stays far below what D1 returns from one query.
SELECT * FROM (
  SELECT p.*,
    sum(p.__row_bytes) OVER (ORDER BY p.created_at DESC, p.id DESC
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS __bytes_before,
    sum(p.__row_bytes) OVER (ORDER BY p.created_at DESC, p.id DESC ROWS UNBOUNDED PRECEDING) AS __bytes_through
  FROM (
    SELECT e.*, {row_bytes} AS __row_bytes FROM {table} AS e
    WHERE e.deleted_at IS NULL
      AND (?1 IS NULL OR e.status = ?1)
      AND (?2 IS NULL OR e.locale = ?2)
      -- After the cursor (?3, ?4) (NULL: from the newest; `~` sorts after any timestamp and id):
      -- a row-value range, so the list index is searched from the cursor, not scanned to it.
      AND (e.created_at, e.id) < (coalesce(?3, '~'), coalesce(?4, '~'))
    ORDER BY e.created_at DESC, e.id DESC
    LIMIT ?5) AS p)
WHERE coalesce(__bytes_before, 0) < ?6
ORDER BY created_at DESC, id DESC
