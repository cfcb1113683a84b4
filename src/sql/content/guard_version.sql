INSERT INTO _emdash_batch_guard (id)
SELECT CASE WHEN EXISTS (SELECT 1 FROM {table} WHERE id = ?2 AND version = ?3
                                 -- Ownership, as in update.sql.
                                 AND (?4 IS NULL OR author_id = ?4)) THEN ?1 END
