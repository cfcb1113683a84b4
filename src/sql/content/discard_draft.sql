-- Drops an entry's draft: the live columns are what it was before the draft was saved, so
-- nothing else changes (not `updated_at`, as in EmDash); the version moves on, as with every
-- write. The revision itself stays in the entry's history.
UPDATE {table}
SET version = version + 1,
    draft_revision_id = NULL
WHERE id = ?1 AND draft_revision_id IS NOT NULL AND deleted_at IS NULL
  -- Ownership: a principal below editor (?2 = its id) changes only entries it authored.
  AND (?2 IS NULL OR author_id = ?2)
RETURNING *
