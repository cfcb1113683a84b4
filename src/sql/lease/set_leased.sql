-- Claimed: leased under the token ?1 until ?2 seconds from now by the database clock (the queue's
-- lease length), one more attempt counted. A row carries a lease token and an expiry only while
-- it is leased.
state = 'leased',
    lease_token = ?1,
    lease_expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || ?2 || ' seconds'),
    attempt_count = attempt_count + 1,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
