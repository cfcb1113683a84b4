-- An entry queued while it has a work row: a new work version (a job that holds the old one can
-- no longer complete or fail it), queued afresh, its last error cleared.
ON CONFLICT (collection_id, content_id) DO UPDATE SET
  work_version = work_version + 1,
  last_error_code = NULL,
  {reset_pending}
