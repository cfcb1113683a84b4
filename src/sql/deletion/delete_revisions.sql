DELETE FROM revisions
WHERE rowid IN (SELECT rowid FROM revisions WHERE collection = ?5 ORDER BY entry_id LIMIT ?4)
  AND {lease}
