INSERT INTO _emdash_fields (id, collection_id, slug, label, type, column_type, required, validation, sort_order)
SELECT json_extract(f.value, '$.id'), ?1, json_extract(f.value, '$.slug'), json_extract(f.value, '$.label'),
       json_extract(f.value, '$.type'), json_extract(f.value, '$.columnType'), json_extract(f.value, '$.required'),
       json_extract(f.value, '$.validation'), json_extract(f.value, '$.sortOrder')
FROM json_each(?2) AS f
