-- An entry's relink write holds only while the entry is as it was loaded (its version, its
-- last write, its draft and live revisions), the relink ?6 holds its lease ?7, and the media
-- item ?8's current key is still ?9.
INSERT INTO _emdash_batch_guard (id)
SELECT CASE WHEN EXISTS (SELECT 1 FROM {table}
                         WHERE id = ?2 AND version = ?3 AND updated_at = ?4
                           AND draft_revision_id IS ?5 AND live_revision_id IS ?10)
             AND EXISTS (SELECT 1 FROM _emdash_media_relinks
                         WHERE id = ?6 AND lease_token = ?7 AND state = 'leased'
                           AND lease_expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
             AND EXISTS (SELECT 1 FROM media WHERE id = ?8 AND storage_key = ?9)
       THEN ?1 END
