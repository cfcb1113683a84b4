-- For each id of the JSON array ?1: whether a media row has it, whether it is in the trash, up to
-- ?2 indexed entries that block its delete (as a JSON array of [collection, id, slug]), and
-- whether an entry too large to index does (`uses/blocks_delete.sql`, each read by the id).
SELECT j.value AS id,
  EXISTS (SELECT 1 FROM media WHERE media.id = j.value) AS found,
  EXISTS (SELECT 1 FROM media WHERE media.id = j.value AND media.deleted_at IS NOT NULL) AS trashed,
  (SELECT json_group_array(json_array(u.collection_slug, u.content_id, u.content_slug)) FROM (
     SELECT DISTINCT collection_slug, content_id, content_slug FROM ({blocks_delete})
     WHERE indexed = 1 LIMIT ?2) AS u) AS entries,
  EXISTS (SELECT 1 FROM ({blocks_delete}) WHERE indexed = 0) AS unindexed_use
FROM json_each(?1) AS j
