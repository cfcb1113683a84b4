UPDATE {table}
SET version = version + 1,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    status = 'published',
    -- A scheduled publish's first publication records the time it was scheduled for (?5).
    published_at = coalesce(published_at, ?5, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    -- Any publish ends the entry's schedule (EmDash's rule).
    scheduled_at = NULL,
    slug = coalesce(?3, slug),
    live_revision_id = coalesce(draft_revision_id, live_revision_id),
    draft_revision_id = NULL{set}
WHERE id = ?1 AND version = ?2
  -- Ownership: a principal below editor (?4 = its id) changes only entries it authored.
  AND (?4 IS NULL OR author_id = ?4)
  -- A scheduled publish (?5: the schedule it fires, ?6: the tick's time, NULL for the database
  -- clock's): only while the entry is outside the trash and still scheduled for exactly then,
  -- and then has come (by the later of the tick's time and the database clock).
  AND (?5 IS NULL
       OR (scheduled_at = ?5 AND deleted_at IS NULL
           AND ?5 <= max(coalesce(?6, ''), strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))))
RETURNING *
