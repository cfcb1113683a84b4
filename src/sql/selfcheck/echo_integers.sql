-- D1 binds every JavaScript number as REAL (its documented type conversion; INTEGER columns turn
-- whole values back into integers), so `t` accepts a whole number of either numeric storage
-- class and rejects text, fractions and NULL.
SELECT ?1 AS a, ?2 AS b, ?3 AS c,
       CASE WHEN typeof(?1) IN ('integer', 'real') AND ?1 = CAST(?1 AS INTEGER)
            THEN 'integer' ELSE typeof(?1) END AS t
