-- Records that the collection ?2's content table is at the table revision ?1.
UPDATE _emdash_collections SET table_revision = ?1 WHERE id = ?2
