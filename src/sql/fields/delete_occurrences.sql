-- The field's occurrences in one window of the walk: after (?4, ?5), up to (?6, ?7), in key
-- order, whose field is ?8 and that were written no later than the deletion (?9; a field of the
-- same slug added since is another field), under the live lease.
DELETE FROM _emdash_media_usage
WHERE (source_key, id) > (?4, ?5) AND (source_key, id) <= (?6, ?7)
  AND field_slug = ?8 AND created_at <= ?9
  AND {lease}
