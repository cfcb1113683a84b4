-- An operator's repair of the collections ?1 (a JSON array of ids) also reopens their failed
-- field deletions: pending and due now at the phase they failed in, the batch back at ?2.
UPDATE _emdash_media_usage_field_deletions
SET {reset_pending},
    last_error_code = NULL,
    batch_rows = ?2
WHERE collection_id IN (SELECT value FROM json_each(?1)) AND state = 'failed'
