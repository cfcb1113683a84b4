-- Records that the collection ?2's content table is at the table revision ?1 (only while it is
-- still registered under the slug ?3 the step read).
UPDATE _emdash_collections SET table_revision = ?1
WHERE id = ?2 AND slug = ?3 AND table_revision < ?1
