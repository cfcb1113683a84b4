-- Revokes a token and, transitively, every token minted from it, in one statement (so a
-- concurrent mint from a token of the tree either lands before it and is revoked with it, or
-- finds its minter gone and inserts nothing). Each step of the walk is a lookup in
-- `idx__emdash_api_tokens_created_by`; UNION (not UNION ALL) ends the walk even on a cycle.
-- Returns the revoked ids.
WITH RECURSIVE tree(id) AS (
  SELECT id FROM _emdash_api_tokens WHERE id = ?1
  UNION
  SELECT child.id FROM _emdash_api_tokens AS child JOIN tree ON child.created_by = tree.id
)
DELETE FROM _emdash_api_tokens WHERE id IN (SELECT id FROM tree)
RETURNING id
