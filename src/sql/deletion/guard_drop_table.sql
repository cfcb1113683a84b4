INSERT INTO _emdash_batch_guard (id)
SELECT CASE WHEN
  EXISTS (SELECT 1 FROM _emdash_media_usage_collection_deletions
          WHERE collection_id = ?2 AND collection_slug = ?4 AND lease_token = ?3 AND phase = 'table'
            AND lease_expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
  -- Never the table of a collection registered under this slug.
  AND NOT EXISTS (SELECT 1 FROM _emdash_collections WHERE slug = ?4)
THEN ?1 END
