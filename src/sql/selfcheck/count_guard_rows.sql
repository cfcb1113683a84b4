SELECT count(*) AS n FROM _emdash_batch_guard
