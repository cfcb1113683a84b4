-- Content tables reference revisions from `live_revision_id` and `draft_revision_id`. Without an
-- index on those columns, deleting a revision (pruning on a draft save, a permanent delete,
-- collection deletion) makes SQLite's foreign-key check scan every content table, once per
-- column and deleted revision; and the sitemaps page through each table's published entries
-- (a partial index). Tables created from now on have the indexes (table revision 1);
-- tables that exist are brought up to date by the tick's `tables` lane, one per step, which
-- records the revision here. A migration cannot do it: it cannot name the `ec_<slug>` tables.
ALTER TABLE _emdash_collections ADD COLUMN table_revision INTEGER NOT NULL DEFAULT 0;
