-- A revision an entry's relink writes (of its draft, as a draft save writes it,
-- `content/insert_revision.sql`; or of its live data as written), on behalf of the editor ?6 who
-- asked for the relink.
INSERT INTO revisions (id, collection, entry_id, data, base_version, author_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
