-- Whether a requested token expiry (`?1`, NULL for none) is a date-time the database understands
-- that lies in the future by the database clock: after a mint inserted nothing, this tells a bad
-- expiry (400) from a minter that is gone (401).
SELECT ?1 IS NULL OR coalesce(strftime('%Y-%m-%dT%H:%M:%fZ', ?1) > strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 0) AS future
