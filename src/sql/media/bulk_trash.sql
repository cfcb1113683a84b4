-- Moves to the trash, in one statement, each media of the JSON array ?1 that is not in use, when
-- coverage proves it: the safe delete's rule (`unused_and_proven.sql`), per item (?2: the
-- deployed reference rules). A content write that starts using an item is ordered before or
-- after this statement: before, and its occurrence (or its pending work, which makes coverage
-- incomplete) refuses the item; after, and the item was unused when trashed — the write's
-- projection then records a use of a trashed item, which "Used in" shows. The ids moved.
UPDATE media SET deleted_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE id IN (SELECT value FROM json_each(?1))
  AND deleted_at IS NULL
  AND {unused_and_proven}
RETURNING id
