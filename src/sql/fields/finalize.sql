-- Ends the deletion of field ?1 held by ?2 at `column`, once its column is gone: the table ?3
-- is dropped, or no longer has it.
DELETE FROM _emdash_media_usage_field_deletions
WHERE field_id = ?1 AND lease_token = ?2 AND phase = 'column'
  AND lease_expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
  AND NOT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?3 AND instr(sql, column_name) > 0)
