-- Drops a deleted field's column: rewrites every row of the table without it.
ALTER TABLE {table} DROP COLUMN {deleted}
