-- A page of the entries outside the trash in the translation group ?1, by locale (then id):
-- at most ?4 rows after (?2, ?3) (NULL: from the first), found by the table's translations
-- index.
SELECT id, locale, slug, status, updated_at FROM {table}
WHERE translation_group = ?1 AND deleted_at IS NULL
  AND (locale, id) > (coalesce(?2, ''), coalesce(?3, ''))
ORDER BY locale, id
LIMIT ?4
