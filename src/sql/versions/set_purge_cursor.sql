-- Records where the versions' purge stands: the last version it examined (?1 its replaced_at, ?2
-- its key), or, with both NULL, that the pass reached the end of the due versions, so the next
-- one starts at the oldest no earlier than ?3 seconds from now.
UPDATE _emdash_media_purge
SET version_cursor_at = ?1, version_cursor_key = ?2,
  version_next_pass_at = CASE WHEN ?2 IS NULL THEN strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || ?3 || ' seconds') END,
  updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE id = 1
