-- Where the storage sweep stands: the listing cursor of the pass in progress (NULL: none), and
-- when the next pass may start (NULL: at once; milliseconds on the object store's clock).
SELECT cursor, next_pass_ms FROM _emdash_media_storage_sweep WHERE id = 1
