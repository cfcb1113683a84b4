-- At least how many rows a content table holds, read in O(1): its largest rowid (rowids only
-- grow, so deleted rows still count). What creating an index on it reads and writes is at most
-- this per index.
SELECT coalesce(max(rowid), 0) AS n FROM {table}
