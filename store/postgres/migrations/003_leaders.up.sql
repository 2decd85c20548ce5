-- Leaderships: one row per name while someone leads it. A row whose
-- expires_at has passed is free to take.
CREATE TABLE hitch_leaders (
    name       text        PRIMARY KEY,
    leader_id  text        NOT NULL,
    elected_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
