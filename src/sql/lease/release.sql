-- Handed back unleased, when {released} is 1 (a statement that always hands its row back leaves
-- it 1; else the row keeps its state and lease): pending, with neither lease token nor expiry.
-- When the row is due again, and what its attempts count, are the embedding statement's.
state = CASE WHEN {released} = 1 THEN 'pending' ELSE state END,
    lease_token = CASE WHEN {released} = 1 THEN NULL ELSE lease_token END,
    lease_expires_at = CASE WHEN {released} = 1 THEN NULL ELSE lease_expires_at END,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
