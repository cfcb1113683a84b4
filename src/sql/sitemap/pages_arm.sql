-- One arm of the sitemap index: the pages of collection {name} that hold a published,
-- non-trashed entry. Page k is the rowid range ((k-1)·?1, k·?1]; each step seeks the first
-- published rowid past the previous page in the table's published index, so the statement reads
-- one index entry per page it lists (and one more), whatever the number of entries. Pages past
-- ?2 are not listed. (D1 may bind the span as a real number: it is cast, so the division is an
-- integer one.)
SELECT {name} AS collection, page FROM (
  WITH RECURSIVE pages(page) AS (
    SELECT (SELECT (e.rowid - 1) / CAST(?1 AS INTEGER) + 1 FROM {table} AS e
            WHERE e.status = 'published' AND e.deleted_at IS NULL
            ORDER BY e.rowid LIMIT 1)
    UNION ALL
    SELECT (SELECT (e.rowid - 1) / CAST(?1 AS INTEGER) + 1 FROM {table} AS e
            WHERE e.status = 'published' AND e.deleted_at IS NULL AND e.rowid > pages.page * ?1
            ORDER BY e.rowid LIMIT 1)
    FROM pages WHERE pages.page IS NOT NULL AND pages.page < ?2
  )
  SELECT page FROM pages WHERE page IS NOT NULL AND page <= ?2)
