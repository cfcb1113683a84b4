INSERT INTO _emdash_batch_guard (id) VALUES (?1) RETURNING id
