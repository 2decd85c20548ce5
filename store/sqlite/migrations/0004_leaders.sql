-- Leaderships: one row per name while someone leads it. A row whose
-- expires_at (microseconds since the Unix epoch) has passed is free to take.
CREATE TABLE leaders (
    name       TEXT    PRIMARY KEY,
    leader_id  TEXT    NOT NULL,
    elected_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) STRICT;
