-- Dropping a deleted field's column (or an index on it): only by the deletion ?2's live lease
-- holder ?3 at `column`.
INSERT INTO _emdash_batch_guard (id)
SELECT CASE WHEN
  EXISTS (SELECT 1 FROM _emdash_media_usage_field_deletions
          WHERE field_id = ?2 AND lease_token = ?3 AND phase = 'column'
            AND lease_expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
THEN ?1 END
