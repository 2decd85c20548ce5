-- Trigger bindings: durable schedules. spec is the binding's definition,
-- which the store does not read; the other columns are its bookkeeping.
-- Times are microseconds since the Unix epoch, 0 for none. next_fire is
-- 0 once the binding is done; claim_until is when a claim runs out, or
-- when a failed dispatch is retried.
CREATE TABLE triggers (
    seq          INTEGER PRIMARY KEY,
    id           TEXT    NOT NULL UNIQUE,
    tenant       TEXT    NOT NULL,
    session_id   TEXT    NOT NULL DEFAULT '',
    spec         TEXT    NOT NULL,
    state        TEXT    NOT NULL CHECK (state IN ('active', 'paused', 'done')),
    fire_count   INTEGER NOT NULL DEFAULT 0,
    missed_count INTEGER NOT NULL DEFAULT 0,
    last_fire    INTEGER NOT NULL DEFAULT 0,
    next_fire    INTEGER NOT NULL DEFAULT 0,
    claim_owner  TEXT    NOT NULL DEFAULT '',
    claim_token  INTEGER NOT NULL DEFAULT 0,
    claim_until  INTEGER NOT NULL DEFAULT 0,
    failures     INTEGER NOT NULL DEFAULT 0,
    last_error   TEXT    NOT NULL DEFAULT '',
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
) STRICT;

CREATE INDEX triggers_due ON triggers (next_fire) WHERE state = 'active';
CREATE INDEX triggers_session ON triggers (session_id, id) WHERE session_id <> '';
