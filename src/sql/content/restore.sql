UPDATE {table}
SET version = version + 1,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    deleted_at = NULL
WHERE id = ?1 AND deleted_at IS NOT NULL
  -- Ownership: a principal below editor (?2 = its id) changes only entries it authored.
  AND (?2 IS NULL OR author_id = ?2)
RETURNING *
