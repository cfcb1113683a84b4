-- A schedule and its cancel change no data: the entry ?1's draft revision, when it was based on
-- the live version ?2 that this write replaces, is based on the version the write makes, so the
-- scheduled publish can take it (a draft older than the live row stays older).
UPDATE revisions SET base_version = ?2 + 1
WHERE id = (SELECT draft_revision_id FROM {table} WHERE id = ?1) AND base_version = ?2
