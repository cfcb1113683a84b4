-- A content table's entries outside the trash by translation group and locale: an entry's
-- translations are one index range.
CREATE INDEX IF NOT EXISTS {index} ON {table} (translation_group, locale, id) WHERE deleted_at IS NULL
