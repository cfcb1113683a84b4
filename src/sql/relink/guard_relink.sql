-- A relink's write holds only while the relink ?2 holds its lease ?3 and the media item ?4's
-- current key is still ?5 (the key the rewrite named).
INSERT INTO _emdash_batch_guard (id)
SELECT CASE WHEN EXISTS (SELECT 1 FROM _emdash_media_relinks
                         WHERE id = ?2 AND lease_token = ?3 AND state = 'leased'
                           AND lease_expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
             AND EXISTS (SELECT 1 FROM media WHERE id = ?4 AND storage_key = ?5)
       THEN ?1 END
