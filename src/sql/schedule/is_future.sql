-- Whether the time ?1 (in the database clock's form) lies after the database clock's now: after a
-- schedule's guard failed, this tells a time in the past (400) from an entry that changed.
SELECT ?1 > strftime('%Y-%m-%dT%H:%M:%fZ', 'now') AS future
