-- A relink's write holds only while every entry of ?2 (a JSON array of objects with id,
-- version, updatedAt, draft and live) is in {table} as it was loaded: its version, its last
-- write, its draft and live revisions. Each entry is found by its primary key.
INSERT INTO _emdash_batch_guard (id)
SELECT CASE WHEN NOT EXISTS (
  SELECT 1 FROM json_each(?2) AS o
  WHERE NOT EXISTS (SELECT 1 FROM {table} AS e
                    WHERE e.id = json_extract(o.value, '$.id')
                      AND e.version = json_extract(o.value, '$.version')
                      AND e.updated_at = json_extract(o.value, '$.updatedAt')
                      AND e.draft_revision_id IS json_extract(o.value, '$.draft')
                      AND e.live_revision_id IS json_extract(o.value, '$.live')))
THEN ?1 END
