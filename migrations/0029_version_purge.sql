-- Where the purge of media versions stands between ticks (beside the trash's purge, in its row):
-- it walks the versions in (replaced_at, storage_key) order from its cursor, a batch per step,
-- so versions still linked never keep the ones behind them from their turn; a pass that reaches
-- the end of the due versions rests until `version_next_pass_at` (NULL: due now).
ALTER TABLE _emdash_media_purge ADD COLUMN version_cursor_at TEXT;
ALTER TABLE _emdash_media_purge ADD COLUMN version_cursor_key TEXT;
ALTER TABLE _emdash_media_purge ADD COLUMN version_next_pass_at TEXT;
