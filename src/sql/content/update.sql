UPDATE {table}
SET version = version + 1,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    slug = coalesce(?3, slug),
    status = coalesce(?4, status),
    published_at = CASE
      WHEN ?4 = 'published' THEN coalesce(published_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
      ELSE published_at
    END{set}
WHERE id = ?1 AND (?2 IS NULL OR version = ?2)
  -- Ownership: a principal below editor (?5 = its id) changes only entries it authored.
  AND (?5 IS NULL OR author_id = ?5)
RETURNING *
