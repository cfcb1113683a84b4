-- What counts as a use is versioned: the reference rules. A collection's coverage is trusted only
-- under the rules it was proven with, recorded in `rules_version` ('1': the first rules, which
-- every index built before this migration used, so every such index reads stale until the ticks
-- have re-projected it). A repair run records the rules it re-projects under and hands them to
-- coverage when it finalises. An empty `rules_version` asks for a re-check under any rules (a
-- media item was registered that existing content may already link to).
ALTER TABLE _emdash_media_usage_index_status ADD COLUMN rules_version TEXT NOT NULL DEFAULT '1';
ALTER TABLE _emdash_media_usage_reconciliations ADD COLUMN rules_version TEXT NOT NULL DEFAULT '1';
