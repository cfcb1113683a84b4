-- Where the deleted column ?1 of the content table ?2 (`{table}`) stands: whether the table still
-- has it, the indexes that name it (an index on a column keeps the column from being dropped),
-- and an upper bound of the rows dropping it rewrites (the table's largest rowid). Reads the
-- schema and one row. Fails (no such table) when the table is gone.
SELECT (SELECT instr(sql, ?1) > 0 FROM sqlite_master WHERE type = 'table' AND name = ?2) AS present,
       (SELECT json_group_array(name) FROM sqlite_master
        WHERE type = 'index' AND tbl_name = ?2 AND instr(sql, ?1) > 0) AS indexes,
       (SELECT coalesce(max(rowid), 0) FROM {table}) AS rows_bound
