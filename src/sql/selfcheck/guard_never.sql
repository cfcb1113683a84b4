INSERT INTO _emdash_batch_guard (id)
SELECT CASE WHEN ?2 = 1 THEN ?1 END
