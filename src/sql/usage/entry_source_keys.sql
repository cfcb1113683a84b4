-- Fragment: the keys of the two sources (live columns, draft overlay) of the enclosing
-- statement's row `entry` (columns `collection_id`, `content_id`), written as
-- `model::source::source_key` writes them: content:<collection id>:<content id>:<variant>.
'content:' || entry.collection_id || ':' || entry.content_id || ':columns',
'content:' || entry.collection_id || ':' || entry.content_id || ':draft_overlay'
