-- Starts the relink ?1 of the media item ?2 at the request of ?3, only while the item exists
-- outside the trash and no relink of it is in progress (else nothing: the caller reads what
-- there is). The entries it has left are counted up to ?4 (beyond: capped, at least ?4): an
-- entry's sources are its source keys less their variant.
INSERT INTO _emdash_media_relinks (id, media_id, requested_by, entries_left, entries_left_capped)
SELECT ?1, m.id, ?3, min(n.entries, ?4), n.entries > ?4
FROM media AS m,
     (SELECT count(*) AS entries FROM (
        SELECT DISTINCT substr(u.source_key, 1, length(u.source_key) - CASE WHEN u.source_key LIKE '%:columns' THEN 7 ELSE 13 END) AS entry
        FROM _emdash_media_usage AS u
        WHERE u.media_id = ?2 AND u.reference_type = 'embedded_url'
        LIMIT ?4 + 1)) AS n
WHERE m.id = ?2 AND m.deleted_at IS NULL
ON CONFLICT DO NOTHING
RETURNING *
