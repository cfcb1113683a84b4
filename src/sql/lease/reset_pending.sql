-- Queued afresh: pending and due now, unleased, with no attempt counted.
state = 'pending',
    attempt_count = 0,
    next_attempt_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    lease_token = NULL,
    lease_expires_at = NULL,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
