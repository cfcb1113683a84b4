-- An index on a deleted field's column: it indexes data no field holds, and keeps the column
-- from being dropped.
DROP INDEX IF EXISTS {index}
