-- A page of an entry's revisions, newest first (insertion order: the rowid, which the entry
-- index of `revisions` holds, so the page is searched from the cursor): at most ?4 rows after
-- the rowid ?3 (NULL: from the newest), and no more rows once the page holds ?5 bytes of
-- revision data (the row that crosses it is the last).
SELECT * FROM (
  SELECT p.*,
    sum(p.__row_bytes) OVER (ORDER BY p.seq DESC ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS __bytes_before,
    sum(p.__row_bytes) OVER (ORDER BY p.seq DESC ROWS UNBOUNDED PRECEDING) AS __bytes_through
  FROM (
    SELECT r.rowid AS seq, r.id, r.collection, r.entry_id, r.data, r.author_id, r.created_at,
           length(CAST(r.data AS BLOB)) AS __row_bytes
    FROM revisions AS r
    WHERE r.collection = ?1 AND r.entry_id = ?2 AND r.rowid < coalesce(?3, 9223372036854775807)
    ORDER BY r.rowid DESC
    LIMIT ?4) AS p)
WHERE coalesce(__bytes_before, 0) < ?5
ORDER BY seq DESC
