-- Deletes each media of the JSON array ?1 in the trash for more than ?2 days (not restored, nor
-- trashed again, meanwhile) that nothing uses, by the safe delete's rule (`unused_and_proven.sql`;
-- ?3: the deployed reference rules): an item force-trashed while in use, or one a content write
-- started using as it was trashed, stays in the trash (its "Used in" says where) until restored
-- or deleted for good by an admin. The rows deleted, for their stored objects.
DELETE FROM media
WHERE id IN (SELECT value FROM json_each(?1))
  AND deleted_at IS NOT NULL AND deleted_at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || ?2 || ' days')
  AND {unused_and_proven}
RETURNING id, storage_key, content_hash
