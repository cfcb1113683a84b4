-- The deleted field's column, out of reach of every statement that names the field: a content
-- write that read the field before its deletion fails (no such column) instead of storing data
-- in it. Renaming changes the schema only (no row is read or written).
ALTER TABLE {table} RENAME COLUMN {field_column} TO {deleted}
