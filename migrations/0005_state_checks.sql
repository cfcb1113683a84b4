-- The states and phases the index stores as TEXT, pinned to their word lists (the code decodes
-- them into enums; an unknown word is an error there too). SQLite cannot add a CHECK constraint
-- to an existing table without rebuilding it, and a rebuild would break the capture triggers of
-- every content table that name these tables, so these triggers enforce the same lists.
CREATE TRIGGER _emdash_media_usage_work_check_insert
BEFORE INSERT ON _emdash_media_usage_work
WHEN NEW.state NOT IN ('pending', 'retry', 'leased', 'failed')
BEGIN
  SELECT RAISE(ABORT, 'CHECK constraint failed: _emdash_media_usage_work.state');
END;

CREATE TRIGGER _emdash_media_usage_work_check_update
BEFORE UPDATE OF state ON _emdash_media_usage_work
WHEN NEW.state NOT IN ('pending', 'retry', 'leased', 'failed')
BEGIN
  SELECT RAISE(ABORT, 'CHECK constraint failed: _emdash_media_usage_work.state');
END;

CREATE TRIGGER _emdash_media_usage_reconciliations_check_insert
BEFORE INSERT ON _emdash_media_usage_reconciliations
WHEN NEW.state NOT IN ('pending', 'retry', 'leased', 'failed')
  OR NEW.phase NOT IN ('scan', 'sources', 'barrier')
BEGIN
  SELECT RAISE(ABORT, 'CHECK constraint failed: _emdash_media_usage_reconciliations.state/phase');
END;

CREATE TRIGGER _emdash_media_usage_reconciliations_check_update
BEFORE UPDATE OF state, phase ON _emdash_media_usage_reconciliations
WHEN NEW.state NOT IN ('pending', 'retry', 'leased', 'failed')
  OR NEW.phase NOT IN ('scan', 'sources', 'barrier')
BEGIN
  SELECT RAISE(ABORT, 'CHECK constraint failed: _emdash_media_usage_reconciliations.state/phase');
END;

CREATE TRIGGER _emdash_media_usage_index_status_check_insert
BEFORE INSERT ON _emdash_media_usage_index_status
WHEN NEW.status NOT IN ('never', 'running', 'complete', 'partial', 'failed', 'stale')
  OR (NEW.capture_state IS NOT NULL AND NEW.capture_state NOT IN ('installing', 'ready', 'active', 'deleting'))
BEGIN
  SELECT RAISE(ABORT, 'CHECK constraint failed: _emdash_media_usage_index_status.status/capture_state');
END;

CREATE TRIGGER _emdash_media_usage_index_status_check_update
BEFORE UPDATE OF status, capture_state ON _emdash_media_usage_index_status
WHEN NEW.status NOT IN ('never', 'running', 'complete', 'partial', 'failed', 'stale')
  OR (NEW.capture_state IS NOT NULL AND NEW.capture_state NOT IN ('installing', 'ready', 'active', 'deleting'))
BEGIN
  SELECT RAISE(ABORT, 'CHECK constraint failed: _emdash_media_usage_index_status.status/capture_state');
END;

CREATE TRIGGER _emdash_media_usage_ticks_check_insert
BEFORE INSERT ON _emdash_media_usage_ticks
WHEN NEW.outcome NOT IN ('idle', 'progress', 'budget', 'error')
BEGIN
  SELECT RAISE(ABORT, 'CHECK constraint failed: _emdash_media_usage_ticks.outcome');
END;
