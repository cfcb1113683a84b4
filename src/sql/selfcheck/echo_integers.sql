SELECT ?1 AS a, ?2 AS b, ?3 AS c, typeof(?1) AS t
