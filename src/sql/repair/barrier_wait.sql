-- Puts a run whose queue has not drained back to wait at the barrier: due again when the
-- collection's earliest unfinished work row is due (now, if one already is), at most 10 s away
-- (?3);
-- 10 s when nothing is queued (whatever keeps the run from finalising is not queue work).
-- Returns whether queue work is due now, so the caller can run it before looking again.
UPDATE _emdash_media_usage_reconciliations
SET {release},
    attempt_count = 0,
    next_attempt_at = min(
      strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || ?3 || ' seconds'),
      coalesce(
        (SELECT max(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), min(due)) FROM (
           -- Its oldest pending row (pending rows are due from when they were queued), its
           -- retrying rows and its leases: a few rows read however many are queued.
           SELECT * FROM (SELECT w.next_attempt_at AS due
                          FROM _emdash_media_usage_work AS w INDEXED BY idx__emdash_media_usage_work_operator
                          WHERE w.collection_id = ?1 AND w.state = 'pending' ORDER BY w.updated_at LIMIT 1)
           UNION ALL
           SELECT min(w.next_attempt_at) FROM _emdash_media_usage_work AS w INDEXED BY idx__emdash_media_usage_work_operator
           WHERE w.collection_id = ?1 AND w.state = 'retry'
           UNION ALL
           SELECT min(w.lease_expires_at) FROM _emdash_media_usage_work AS w INDEXED BY idx__emdash_media_usage_work_operator
           WHERE w.collection_id = ?1 AND w.state = 'leased')),
        strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || ?3 || ' seconds')))
WHERE collection_id = ?1 AND lease_token = ?2 AND state = 'leased'
RETURNING next_attempt_at <= updated_at AS work_due
