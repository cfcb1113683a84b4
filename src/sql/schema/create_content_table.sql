CREATE TABLE {table} (
  id TEXT PRIMARY KEY,
  slug TEXT,
  status TEXT NOT NULL DEFAULT 'draft',
  author_id TEXT,
  primary_byline_id TEXT,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  published_at TEXT,
  scheduled_at TEXT,
  deleted_at TEXT,
  version INTEGER NOT NULL DEFAULT 1,
  live_revision_id TEXT REFERENCES revisions (id),
  draft_revision_id TEXT REFERENCES revisions (id),
  locale TEXT NOT NULL DEFAULT 'en',
  translation_group TEXT{columns},
  UNIQUE (slug, locale)
)
