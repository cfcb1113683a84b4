-- A failed attempt: `failed` for good when ?1 = 1, else `retry`, due ?2 seconds from now (the
-- backoff); the lease ends and the error code ?3 is kept for operators.
state = CASE WHEN ?1 = 1 THEN 'failed' ELSE 'retry' END,
    next_attempt_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || ?2 || ' seconds'),
    lease_token = NULL,
    lease_expires_at = NULL,
    last_error_code = ?3,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
