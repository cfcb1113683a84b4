-- The safe delete's guard: a row (?1) only while the media item ?2 is not in use and coverage
-- proves it under the deployed reference rules ?3 (`media/unused_and_proven.sql`).
INSERT INTO _emdash_batch_guard (id)
SELECT CASE WHEN
  {unused_and_proven}
THEN ?1 END
