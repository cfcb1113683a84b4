-- Records a failed attempt under the live lease (?4 collection, ?5 lease token); see the failure
-- fragment for ?1-?3. The phase is kept.
UPDATE _emdash_media_usage_collection_deletions
SET {fail}
WHERE collection_id = ?4 AND lease_token = ?5 AND lease_expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
