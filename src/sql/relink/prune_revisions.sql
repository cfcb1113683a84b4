-- Keeps each entry of ?2 (a JSON array of ids) in {table}, of the collection ?1, at its newest
-- revisions: its live and draft ones always, plus the newest ?3 others (insertion order), as a
-- draft save's pruning keeps them (`content/prune_revisions.sql`), for every entry a relink
-- wrote in one statement. An entry holds at most one revision more than it keeps.
DELETE FROM revisions WHERE rowid IN (
  SELECT rid FROM (
    SELECT r.rowid AS rid, row_number() OVER (PARTITION BY r.entry_id ORDER BY r.rowid DESC) AS n
    FROM json_each(?2) AS j
    CROSS JOIN {table} AS e ON e.id = j.value
    CROSS JOIN revisions AS r ON r.collection = ?1 AND r.entry_id = e.id
    WHERE r.id IS NOT e.live_revision_id AND r.id IS NOT e.draft_revision_id)
  WHERE n > ?3)
