-- A schedule's preconditions (?1: the guard token): the time ?5 lies after the database clock's
-- now (EmDash's rule), and the entry ?2 is outside the trash, still at version ?3 and, with ?4
-- (a principal below editor), authored by ?4.
INSERT INTO _emdash_batch_guard (id)
SELECT CASE WHEN ?5 > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
             AND EXISTS (SELECT 1 FROM {table} WHERE id = ?2 AND version = ?3 AND deleted_at IS NULL
                                                 AND (?4 IS NULL OR author_id = ?4))
            THEN ?1 END
