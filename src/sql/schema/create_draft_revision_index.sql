CREATE INDEX IF NOT EXISTS {index} ON {table} (draft_revision_id) WHERE draft_revision_id IS NOT NULL
