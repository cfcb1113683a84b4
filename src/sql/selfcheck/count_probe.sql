SELECT count(*) AS n FROM _emdash_selfcheck_probes WHERE id = ?1
