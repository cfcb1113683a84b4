-- An entry whose references pass the admission limit is not indexed: its work row fails with
-- MEDIA_USAGE_RESOURCE_LIMIT and stays on the operator work list. The media items it references
-- are still known, and kept on that failed row (a JSON array of media ids; NULL otherwise), so
-- such an entry blocks the safe delete of exactly those items instead of making its
-- collection's coverage partial for every item. The partial index keeps the delete guard's look
-- at these rows to the rows that have such a list.
ALTER TABLE _emdash_media_usage_work ADD COLUMN unindexed_media TEXT;
CREATE INDEX idx__emdash_media_usage_work_unindexed ON _emdash_media_usage_work (collection_id, content_id)
  WHERE unindexed_media IS NOT NULL;
