-- Takes the baton under a new token ?1 for ?2 seconds when none is in flight, when the one in
-- flight expired, or when ?3 is the token of the message now being handled (it hands the baton on).
INSERT INTO _emdash_media_usage_continuation (id, token, sent_at, expires_at)
VALUES (1, ?1, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || ?2 || ' seconds'))
ON CONFLICT (id) DO UPDATE SET
  token = excluded.token,
  sent_at = excluded.sent_at,
  expires_at = excluded.expires_at
WHERE _emdash_media_usage_continuation.expires_at <= strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
   OR _emdash_media_usage_continuation.token IS ?3
RETURNING token
