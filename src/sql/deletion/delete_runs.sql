DELETE FROM _emdash_media_usage_reconciliations
WHERE collection_id = ?1 AND {lease}
