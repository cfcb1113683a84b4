-- Deletes the media ?1 for good only if nothing uses it and coverage proves it, by the safe
-- delete's rule (`unused_and_proven.sql`; ?2: the deployed reference rules), whether or not it is
-- in the trash. The rule and the delete are one statement: a client's retry after an error, or a
-- delete racing a content write that starts using the item, is judged at the instant of the
-- delete, never by what an earlier statement saw. The row deleted, for its stored object.
DELETE FROM media
WHERE id = ?1
  AND {unused_and_proven}
RETURNING id, storage_key, content_hash
