-- Takes what the cleanup statement before it in its batch deleted (`changes()`) off the figure of
-- the kind ?4 (0 work, 1 revisions, 2 occurrences, 3 sources); a statement that deleted fewer
-- rows than it was allowed (?5) found the kind exhausted, whose figure is then 0. Under the live
-- lease (?1-?3): a holder whose lease is live now held it when the cleanup statement ran, so
-- `changes()` is what that statement deleted; and the batch is atomic, so the figure moves
-- exactly when the rows go.
UPDATE _emdash_media_usage_collection_deletions
SET left_work = CASE WHEN ?4 <> 0 THEN left_work WHEN changes() < ?5 THEN 0
                     ELSE max(0, left_work - changes()) END,
    left_revisions = CASE WHEN ?4 <> 1 THEN left_revisions WHEN changes() < ?5 THEN 0
                          ELSE max(0, left_revisions - changes()) END,
    left_occurrences = CASE WHEN ?4 <> 2 THEN left_occurrences WHEN changes() < ?5 THEN 0
                            ELSE max(0, left_occurrences - changes()) END,
    left_sources = CASE WHEN ?4 <> 3 THEN left_sources WHEN changes() < ?5 THEN 0
                        ELSE max(0, left_sources - changes()) END
WHERE collection_id = ?1 AND {lease}
