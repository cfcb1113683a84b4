-- Records a use of the token ?1 unless one was recorded within the last ?2 seconds.
UPDATE _emdash_api_tokens
SET last_used_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE id = ?1
  AND (last_used_at IS NULL OR last_used_at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || ?2 || ' seconds'))
