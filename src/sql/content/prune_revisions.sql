-- Keeps an entry's newest revisions: its draft (?3) and live revision always, plus the newest
-- ?4 others (insertion order); deletes at most 1,000 older ones per call.
DELETE FROM revisions WHERE rowid IN (
  SELECT r.rowid FROM revisions AS r
  WHERE r.collection = ?1 AND r.entry_id = ?2 AND r.id <> ?3
    AND r.id IS NOT (SELECT live_revision_id FROM {table} WHERE id = ?2)
  ORDER BY r.rowid DESC
  LIMIT 1000 OFFSET ?4)
