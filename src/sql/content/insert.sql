-- ?6: the author (the creating token), kept for ownership checks.
INSERT INTO {table} (id, slug, status, locale, translation_group, author_id, published_at{columns})
VALUES (?1, ?2, ?3, ?4, ?5, ?6,
        CASE WHEN ?3 = 'published' THEN strftime('%Y-%m-%dT%H:%M:%fZ', 'now') END{placeholders})
RETURNING *
