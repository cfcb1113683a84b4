-- Ends the chain: only the holder of the baton drops it.
DELETE FROM _emdash_media_usage_continuation WHERE token = ?1
