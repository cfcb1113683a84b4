-- What a collection deletion has left, kept on its tombstone so a status read costs one row
-- whatever the size of the deletion.
--
-- Before it deletes anything, the deletion lane counts each kind of row it will delete (work
-- rows, revisions, occurrences, sources; `count_kind` 0 to 3, 4 once all are counted) a page per
-- statement, from a cursor in the kind's index order (`count_key`, and `count_tie` where the key
-- is not unique: a revision's rowid, an occurrence's id); each page's statement adds what it
-- counted and moves the cursor at once, so a statement repeated after a crash or a
-- commit-unknown counts the next page, never the same one twice. Each cleanup statement then
-- runs in one atomic batch with the statement that takes what it deleted off its kind's figure,
-- and a kind found exhausted sets its figure to 0.
ALTER TABLE _emdash_media_usage_collection_deletions ADD COLUMN left_work INTEGER NOT NULL DEFAULT 0 CHECK (left_work >= 0);
ALTER TABLE _emdash_media_usage_collection_deletions ADD COLUMN left_revisions INTEGER NOT NULL DEFAULT 0 CHECK (left_revisions >= 0);
ALTER TABLE _emdash_media_usage_collection_deletions ADD COLUMN left_occurrences INTEGER NOT NULL DEFAULT 0 CHECK (left_occurrences >= 0);
ALTER TABLE _emdash_media_usage_collection_deletions ADD COLUMN left_sources INTEGER NOT NULL DEFAULT 0 CHECK (left_sources >= 0);
ALTER TABLE _emdash_media_usage_collection_deletions ADD COLUMN count_kind INTEGER NOT NULL DEFAULT 0 CHECK (count_kind BETWEEN 0 AND 4);
ALTER TABLE _emdash_media_usage_collection_deletions ADD COLUMN count_key TEXT NOT NULL DEFAULT '';
-- Untyped: a revision's rowid or an occurrence's id, compared as stored.
ALTER TABLE _emdash_media_usage_collection_deletions ADD COLUMN count_tie;

-- A deletion past its cleanup phases has nothing left to count.
UPDATE _emdash_media_usage_collection_deletions SET count_kind = 4 WHERE phase IN ('status', 'finalize');
