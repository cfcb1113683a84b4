-- A cancel's preconditions (?1: the guard token): the entry ?2 is outside the trash, scheduled,
-- still at version ?3 and, with ?4 (a principal below editor), authored by ?4.
INSERT INTO _emdash_batch_guard (id)
SELECT CASE WHEN EXISTS (SELECT 1 FROM {table} WHERE id = ?2 AND version = ?3 AND deleted_at IS NULL
                                                 AND scheduled_at IS NOT NULL
                                                 AND (?4 IS NULL OR author_id = ?4))
            THEN ?1 END
