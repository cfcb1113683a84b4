-- Starts the relink ?1 of the media item ?2 at the request of ?5, only while the item exists
-- outside the trash and no relink of it is in progress (else nothing: the caller reads what
-- there is). The entries it has left (those linking an earlier key after the cursor ?3, '') are
-- counted up to ?4 (beyond: capped, at least ?4).
INSERT INTO _emdash_media_relinks (id, media_id, requested_by, entries_left, entries_left_capped)
SELECT ?1, m.id, ?5, min(n.entries, ?4), n.entries > ?4
FROM media AS m,
     (SELECT count(*) AS entries FROM ({entries_after})) AS n
WHERE m.id = ?2 AND m.deleted_at IS NULL
ON CONFLICT DO NOTHING
RETURNING *
