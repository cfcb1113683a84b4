UPDATE {table}
SET version = version + 1,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    status = 'published',
    published_at = coalesce(published_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    slug = coalesce(?3, slug),
    live_revision_id = coalesce(draft_revision_id, live_revision_id),
    draft_revision_id = NULL{set}
WHERE id = ?1 AND version = ?2
  -- Ownership: a principal below editor (?4 = its id) changes only entries it authored.
  AND (?4 IS NULL OR author_id = ?4)
RETURNING *
