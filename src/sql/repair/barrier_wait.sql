-- Puts a run whose queue has not drained back to wait at the barrier: due again when the
-- collection's earliest unfinished work row is due (now, if one already is), at most 10 s away;
-- 10 s when nothing is queued (whatever keeps the run from finalising is not queue work).
-- Returns whether queue work is due now, so the caller can run it before looking again.
UPDATE _emdash_media_usage_reconciliations
SET state = 'pending',
    attempt_count = 0,
    next_attempt_at = min(
      strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || ?3 || ' seconds'),
      coalesce(
        (SELECT max(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
                    min(CASE WHEN w.state = 'leased' THEN w.lease_expires_at ELSE w.next_attempt_at END))
         FROM _emdash_media_usage_work AS w
         WHERE w.collection_id = ?1 AND w.state <> 'failed'),
        strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || ?3 || ' seconds'))),
    lease_token = NULL,
    lease_expires_at = NULL,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE collection_id = ?1 AND lease_token = ?2 AND state = 'leased'
RETURNING next_attempt_at <= updated_at AS work_due
