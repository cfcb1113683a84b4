-- A guarded batch's assertion row is consumed as soon as it is inserted: the NOT NULL check has
-- already done its work (a NULL aborts the batch before this trigger runs), so the batch needs
-- no cleanup statement and the guard table stays empty.
CREATE TRIGGER _emdash_batch_guard_consumed AFTER INSERT ON _emdash_batch_guard
BEGIN
  DELETE FROM _emdash_batch_guard WHERE id = NEW.id;
END;

-- Rows the self-check writes and removes (it can no longer probe the guard table itself).
CREATE TABLE _emdash_selfcheck_probes (
  id TEXT PRIMARY KEY
);
