-- A content table's published, non-trashed entries in rowid order (every entry of the index has
-- the same `status`, so it is sorted by the rowid SQLite appends): the sitemaps' pages are rowid
-- ranges of it, and the first published rowid past a page is one index seek.
CREATE INDEX IF NOT EXISTS {index} ON {table} (status) WHERE status = 'published' AND deleted_at IS NULL
