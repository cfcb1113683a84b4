DELETE FROM _emdash_selfcheck_probes WHERE id IN (?1, ?2)
