EXISTS (SELECT 1 FROM _emdash_media_usage_collection_deletions AS lease
        WHERE lease.collection_id = ?1 AND lease.lease_token = ?2 AND lease.phase = ?3
          AND lease.state = 'leased' AND lease.lease_expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
