INSERT INTO _emdash_selfcheck_probes (id) VALUES (?1) RETURNING id
