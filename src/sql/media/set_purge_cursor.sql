-- Records where the purge's pass stands: the last trashed item it examined (?1 its deleted_at,
-- ?2 its id), or, with both NULL, that the pass reached the end of the due items, so the next one
-- starts at the oldest no earlier than ?3 seconds from now.
UPDATE _emdash_media_purge
SET cursor_deleted_at = ?1, cursor_id = ?2,
  next_pass_at = CASE WHEN ?2 IS NULL THEN strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || ?3 || ' seconds') END,
  updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE id = 1
