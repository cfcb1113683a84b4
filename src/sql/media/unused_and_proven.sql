-- Fragment: the safe delete's rule, that a media item is not in use and that coverage proves it,
-- a conjunction that the single delete's guard, the permanent delete, the bulk trash and the
-- purge embed. The embedding statement fills in the item's id (a parameter, or its own row's
-- `media.id`) and the parameter bound to the deployed reference rules.
-- Nothing blocks its delete (`uses/blocks_delete.sql`: no current occurrence of a registered
-- collection references it, nor does an entry too large to index) ...
NOT EXISTS ({blocks_delete})
-- ... and coverage proves it (`coverage_proven.sql`).
AND {coverage_proven}
