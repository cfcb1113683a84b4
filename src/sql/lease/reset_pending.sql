-- Queued afresh: handed back unleased (`release.sql`), due now, with no attempt counted.
{release},
    attempt_count = 0,
    next_attempt_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
