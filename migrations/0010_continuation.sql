-- The continuation baton: while a row exists, one continuation message (a queued tick) is in
-- flight, held by `token`, until `expires_at`. Only the holder hands it on (or drops it); once
-- it expires, any tick may send a new one, so a lost message only delays work.
CREATE TABLE _emdash_media_usage_continuation (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  token TEXT NOT NULL,
  sent_at TEXT NOT NULL,
  expires_at TEXT NOT NULL
);
