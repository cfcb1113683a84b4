-- A job whose entry is too heavy for the tick's CPU budget with both of its source variants
-- projects and publishes the live columns alone and hands the work row back queued, marked with
-- the work version at which it did: the next job that finds the mark equal to the row's work
-- version projects only the draft overlay and completes the row. Any write that queues the entry
-- again bumps the work version, so a mark is stale by construction and never cleared.
ALTER TABLE _emdash_media_usage_work ADD COLUMN partial_work_version INTEGER;
