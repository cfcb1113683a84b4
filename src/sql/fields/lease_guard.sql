-- Held by this token (a row carries a token only while leased: a CHECK constraint), at this
-- phase, with a lease that has not run out.
EXISTS (SELECT 1 FROM _emdash_media_usage_field_deletions AS lease
        WHERE lease.field_id = ?1 AND lease.lease_token = ?2 AND lease.phase = ?3
          AND lease.lease_expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
