-- The sources whose occurrences of the field the window deletes (as `delete_occurrences.sql`
-- selects them) no longer hold the projection their fingerprint names: it is cleared, so the
-- next projection of their entry is never taken for a no-op (a field of the same slug and type
-- added again would make it match). Under the live lease.
UPDATE _emdash_media_usage_sources
SET source_fingerprint = NULL,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE source_key IN (SELECT u.source_key FROM _emdash_media_usage AS u
                     WHERE (u.source_key, u.id) > (?4, ?5) AND (u.source_key, u.id) <= (?6, ?7)
                       AND u.field_slug = ?8 AND u.created_at <= ?9)
  AND {lease}
