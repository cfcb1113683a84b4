SELECT cursor FROM _emdash_media_storage_sweep WHERE id = 1
