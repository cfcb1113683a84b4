SELECT c.id AS collection_id, c.slug AS collection_slug, c.label AS collection_label,
       c.created_at AS collection_created_at, c.updated_at AS collection_updated_at,
       f.id AS field_id, f.slug AS field_slug, f.label AS field_label, f.type AS field_type,
       f.required AS field_required, f.validation AS field_validation, f.sort_order AS field_sort_order,
       f.options AS field_options, f.created_at AS field_created_at, f.updated_at AS field_updated_at
FROM _emdash_collections AS c
LEFT JOIN _emdash_fields AS f ON f.collection_id = c.id
WHERE ?1 IS NULL OR c.slug = ?1
ORDER BY c.slug, f.sort_order, f.slug
