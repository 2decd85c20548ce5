-- Trigger bindings: durable schedules. spec is the binding's definition,
-- which the store does not read; the other columns are its bookkeeping.
-- next_fire is NULL once the binding is done; claim_until is when a claim
-- runs out, or when a failed dispatch is retried (NULL: claimable).
CREATE TABLE hitch_triggers (
    seq          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id           text        NOT NULL UNIQUE,
    tenant       text        NOT NULL,
    session_id   text        NOT NULL DEFAULT '',
    spec         json        NOT NULL,
    state        text        NOT NULL CHECK (state IN ('active', 'paused', 'done')),
    fire_count   bigint      NOT NULL DEFAULT 0,
    missed_count bigint      NOT NULL DEFAULT 0,
    last_fire    timestamptz,
    next_fire    timestamptz,
    claim_owner  text        NOT NULL DEFAULT '',
    claim_token  bigint      NOT NULL DEFAULT 0,
    claim_until  timestamptz,
    failures     integer     NOT NULL DEFAULT 0,
    last_error   text        NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);

CREATE INDEX hitch_triggers_due ON hitch_triggers (next_fire) WHERE state = 'active';
CREATE INDEX hitch_triggers_session ON hitch_triggers (session_id, id) WHERE session_id <> '';
