-- Records where the storage sweep stands: the listing cursor of the pass in progress (?1), or,
-- with ?1 NULL, that the pass ended and the next starts no earlier than ?2 (milliseconds on the
-- object store's clock).
UPDATE _emdash_media_storage_sweep
SET cursor = ?1, next_pass_ms = ?2, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE id = 1
