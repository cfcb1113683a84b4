-- Deletes each version of the JSON array ?1 (storage keys) replaced more than ?2 days ago that
-- nothing links, while coverage proves it: no occurrence at all names its key (`linked_key`; any
-- generation, any collection: conservative), no entry too large to index lists its item (such an
-- entry's file URLs are unknown), and every registered collection's coverage is complete under
-- the deployed reference rules ?3 (an entry written meanwhile may link it: its pending work makes
-- coverage incomplete). The rule is this statement's own, so a link written as it runs is ordered
-- before it (and keeps the version) or after it (and names a key no item has: a pending key). The
-- rows deleted, for their stored objects.
DELETE FROM media_versions
WHERE storage_key IN (SELECT value FROM json_each(?1))
  AND replaced_at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || ?2 || ' days')
  AND NOT EXISTS (SELECT 1 FROM _emdash_media_usage AS u INDEXED BY idx__emdash_media_usage_linked_source
                  WHERE u.linked_key = media_versions.storage_key)
  AND NOT EXISTS ({unindexed_uses})
  AND {coverage_proven}
RETURNING media_id AS id, storage_key, content_hash
