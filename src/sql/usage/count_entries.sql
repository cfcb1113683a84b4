SELECT count(*) AS n FROM (
  SELECT DISTINCT collection_id, content_id
  FROM _emdash_media_usage_eligible
  WHERE media_id = ?1 AND content_deleted_at IS NULL
)
