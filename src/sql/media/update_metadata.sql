-- Updates what a request gives of the metadata of the media ?1 (NULL: kept as it is): the alt
-- text ?2, the caption ?3, the width ?4 and the height ?5. Only an item the caller may change:
-- any with ?6 NULL (an editor or admin), else one whose author is ?6 (below editor: its own; an
-- item without an author is nobody's own). The ownership is this statement's own condition, so
-- nothing read before it decides. The row as it is now; none when there is no such item or it is
-- not the caller's to change.
UPDATE media
SET alt = coalesce(?2, alt), caption = coalesce(?3, caption), width = coalesce(?4, width),
    height = coalesce(?5, height)
WHERE id = ?1 AND (?6 IS NULL OR author_id = ?6)
RETURNING *
