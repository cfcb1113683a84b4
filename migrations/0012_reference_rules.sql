-- What counts as a use is versioned: the reference rules. A collection's coverage is trusted only
-- under the rules it was proven with, recorded in `rules_version` ('1': the first rules, which
-- every index built before this migration used, so every such index reads stale until the ticks
-- have re-projected it). A repair run records the rules it re-projects under and hands them to
-- coverage when it finalises.
ALTER TABLE _emdash_media_usage_index_status ADD COLUMN rules_version TEXT NOT NULL DEFAULT '1';
ALTER TABLE _emdash_media_usage_reconciliations ADD COLUMN rules_version TEXT NOT NULL DEFAULT '1';

-- The storage keys a source's file URLs name that no media item had when it was projected (a
-- JSON array of their readings; NULL when none). Registering a media item under such a key
-- re-queues exactly those sources; the partial index keeps that lookup to the sources that have
-- such links.
ALTER TABLE _emdash_media_usage_sources ADD COLUMN pending_keys TEXT;
CREATE INDEX idx__emdash_media_usage_sources_pending ON _emdash_media_usage_sources (source_key)
  WHERE pending_keys IS NOT NULL;
