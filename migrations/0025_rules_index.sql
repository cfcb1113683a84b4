-- The coverage rows whose reference rules differ from the deployed ones, found by index: the
-- repair lane looks for them every tick, and an idle tick reads none of them (not the rows of
-- collections whose coverage is proven under the deployed rules, nor those of collections being
-- deleted, whatever their number).

CREATE INDEX idx__emdash_media_usage_index_status_rules ON _emdash_media_usage_index_status (rules_version)
WHERE adapter_id = 'content-media' AND scope_type = 'collection' AND capture_state = 'active';
