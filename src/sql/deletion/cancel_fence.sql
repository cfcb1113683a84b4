-- Runs right after the fence, in its batch, without force: when every precondition of the fence
-- but its content check still holds, the fence failed because of entries outside the trash, so
-- the deletion is cancelled and the collection kept.
DELETE FROM _emdash_media_usage_collection_deletions
WHERE collection_id = ?1 AND lease_token = ?2 AND phase = ?3
  AND lease_expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
  AND collection_slug = ?4 AND force_delete = 0
  AND EXISTS (SELECT 1 FROM _emdash_collections WHERE id = ?1 AND slug = ?4)
  AND EXISTS (SELECT 1 FROM _emdash_media_usage_index_status
              WHERE adapter_id = 'content-media' AND scope_type = 'collection'
                AND collection_id = ?1 AND scope_key = ?4 AND capture_state = 'active')
