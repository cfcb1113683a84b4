-- ?6: the author (the creating token), kept for ownership checks.
-- The slug: ?2 as given; without one, made unique here from the base ?7 (NULL: no slug), so
-- that two creates of one title never race between a lookup and the insert: the base when its
-- (slug, locale) is free, else `base-N` for N one above the largest `base-<digits>` (up to 18
-- digits) in the locale, plus ?8 (a retry's offset). The slug index is searched by range.
INSERT INTO {table} (id, slug, status, locale, translation_group, author_id, published_at{columns})
VALUES (?1,
        coalesce(?2, CASE
          WHEN ?7 IS NULL OR NOT EXISTS (SELECT 1 FROM {table} WHERE slug = ?7 AND locale = ?4) THEN ?7
          -- An integer, whatever type the offset was bound as (D1 binds numbers as reals).
          ELSE ?7 || '-' || CAST(?8 + 1 + coalesce((
            SELECT max(CAST(substr(s.slug, length(?7) + 2) AS INTEGER)) FROM {table} AS s
            WHERE s.slug > ?7 || '-' AND s.slug < ?7 || '.' AND s.locale = ?4
              AND length(s.slug) <= length(?7) + 19
              AND substr(s.slug, length(?7) + 2) NOT GLOB '*[^0-9]*'), 0) AS INTEGER)
        END),
        ?3, ?4, ?5, ?6,
        CASE WHEN ?3 = 'published' THEN strftime('%Y-%m-%dT%H:%M:%fZ', 'now') END{placeholders})
RETURNING *
