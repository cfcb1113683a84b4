-- A field of the collection ?1 was deleted: its field epoch, which every projection's
-- fingerprint of its entries includes from then on, moves on (and the collection is touched). The
-- occurrences the deletion's walk removes leave their sources' stored fingerprints naming a
-- projection that no longer exists; under the new epoch no projection can match them, even with
-- a field of the same slug and type added again, so none is taken for a no-op.
UPDATE _emdash_collections
SET field_epoch = field_epoch + 1,
    updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE id = ?1
