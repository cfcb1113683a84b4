-- Moves the media ?1 to the trash (its row and object kept). Already trashed: no change. Only an
-- item the caller may delete: any with ?2 NULL (an editor or admin), else one whose author is ?2
-- (below editor: its own; an item without an author is nobody's own).
UPDATE media SET deleted_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE id = ?1 AND deleted_at IS NULL AND (?2 IS NULL OR author_id = ?2)
