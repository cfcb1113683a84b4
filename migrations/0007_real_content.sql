-- Real content: drafts remember the live version they were based on, the index keeps a bounded
-- display title, and repeaters' file sub-fields are extraction fields.

-- The live `version` a draft revision's own save wrote; NULL for revisions saved before this
-- migration (published as they are, as before).
ALTER TABLE revisions ADD COLUMN base_version INTEGER;

-- Titles are shown and fingerprinted cut to 200 characters.
UPDATE _emdash_media_usage_sources SET content_title = substr(content_title, 1, 200)
WHERE length(content_title) > 200;

-- Repeaters' `file` sub-fields were not extracted before: a collection with such a repeater and
-- indexed entries needs a repair before its coverage can be trusted again (as after adding such
-- a field).
UPDATE _emdash_media_usage_index_status
SET change_epoch = change_epoch + 1,
    status = 'stale',
    reconciliation_required = 1,
    last_error_code = 'CONTENT_USAGE_STALE',
    completed_at = NULL,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE adapter_id = 'content-media' AND scope_type = 'collection'
  AND collection_id IN (
    SELECT f.collection_id FROM _emdash_fields AS f, json_each(
      CASE WHEN json_valid(f.validation) AND json_type(f.validation, '$.subFields') = 'array'
           THEN json_extract(f.validation, '$.subFields') ELSE '[]' END) AS sub
    WHERE f.type = 'repeater' AND json_extract(sub.value, '$.type') = 'file')
  AND EXISTS (SELECT 1 FROM _emdash_media_usage_sources AS s
              WHERE s.collection_id = _emdash_media_usage_index_status.collection_id);
