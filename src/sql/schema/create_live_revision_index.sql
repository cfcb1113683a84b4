CREATE INDEX IF NOT EXISTS {index} ON {table} (live_revision_id) WHERE live_revision_id IS NOT NULL
