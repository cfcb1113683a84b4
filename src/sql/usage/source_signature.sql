-- Fragment: the signature of the stored source rows of the enclosing statement's row `entry`
-- (every column a projection depends on, in key order). A job reads it with the entry and its
-- publish asserts it is unchanged; both embed this one text.
(SELECT json_group_array(json_array(s.source_key, s.current_generation, s.updated_at, s.source_fingerprint,
                                    s.source_completeness, s.last_error_code, s.collection_id,
                                    s.source_updated_at, s.source_version, s.identity_version,
                                    s.revision_id, s.last_attempted_at))
 FROM (SELECT * FROM _emdash_media_usage_sources WHERE source_key IN ({entry_source_keys})
       ORDER BY source_key) AS s)
