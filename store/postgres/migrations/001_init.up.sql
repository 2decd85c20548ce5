-- Runs: one row per run. Text columns use '' for "none"; NULL times mean
-- "not set" (no lease, no wake time).
CREATE TABLE hitch_runs (
    seq              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id               text        NOT NULL UNIQUE,
    root_id          text        NOT NULL,
    parent_id        text        NOT NULL DEFAULT '',
    depth            integer     NOT NULL CHECK (depth >= 0),
    agent            text        NOT NULL,
    version          integer     NOT NULL,
    input_hash       text        NOT NULL,
    status           text        NOT NULL CHECK (status IN (
                         'queued', 'running', 'waiting', 'completed', 'failed',
                         'cancelled', 'answer_invalid', 'budget_exhausted')),
    position         bigint      NOT NULL CHECK (position >= 0),
    lease_owner      text        NOT NULL DEFAULT '',
    lease_token      bigint      NOT NULL DEFAULT 0,
    lease_expires    timestamptz,
    wake_at          timestamptz,
    cancel_requested boolean     NOT NULL DEFAULT false,
    outcome          json,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
);

CREATE INDEX hitch_runs_newest ON hitch_runs (created_at DESC, seq DESC);
CREATE INDEX hitch_runs_parent ON hitch_runs (parent_id, created_at DESC, seq DESC) WHERE parent_id <> '';
CREATE INDEX hitch_runs_root ON hitch_runs (root_id);
-- The two halves of "due": leased states whose lease is absent or ran out,
-- and waiting runs whose timer came.
CREATE INDEX hitch_runs_lease_due ON hitch_runs (lease_expires NULLS FIRST) WHERE status IN ('queued', 'running');
CREATE INDEX hitch_runs_wake_due ON hitch_runs (wake_at) WHERE status = 'waiting' AND wake_at IS NOT NULL;

-- The journal, keyed by (run, position): a read by offset is one range scan,
-- and two writers of one position cannot both succeed. json (not jsonb)
-- keeps each entry's bytes as they were written.
CREATE TABLE hitch_journal (
    run_seq bigint      NOT NULL REFERENCES hitch_runs (seq),
    pos     bigint      NOT NULL CHECK (pos > 0),
    kind    text        NOT NULL,
    at      timestamptz NOT NULL,
    data    json        NOT NULL,
    PRIMARY KEY (run_seq, pos)
);

-- A family's budget, kept with its root run: limits (0 is unlimited) and use.
CREATE TABLE hitch_budgets (
    root_seq          bigint PRIMARY KEY REFERENCES hitch_runs (seq),
    limit_tokens      bigint NOT NULL,
    limit_micro_usd   bigint NOT NULL,
    limit_model_calls bigint NOT NULL,
    limit_tool_calls  bigint NOT NULL,
    limit_wall_ms     bigint NOT NULL,
    used_tokens       bigint NOT NULL DEFAULT 0,
    used_micro_usd    bigint NOT NULL DEFAULT 0,
    used_model_calls  bigint NOT NULL DEFAULT 0,
    used_tool_calls   bigint NOT NULL DEFAULT 0
);

-- Wakeups: a run that may have become claimable (created, released,
-- woken) or was asked to cancel notifies channel hitch_wake with its
-- schema's name, at commit. Nodes listening there claim at once instead of
-- at their next poll.
CREATE FUNCTION hitch_notify_wake() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('hitch_wake', TG_TABLE_SCHEMA);
    RETURN NULL;
END
$$;

CREATE TRIGGER hitch_runs_wake_insert AFTER INSERT ON hitch_runs
    FOR EACH ROW EXECUTE FUNCTION hitch_notify_wake();

CREATE TRIGGER hitch_runs_wake_update AFTER UPDATE ON hitch_runs
    FOR EACH ROW
    WHEN ((NEW.lease_owner = '' AND (NEW.status IN ('queued', 'running') OR (NEW.status = 'waiting' AND NEW.wake_at IS NOT NULL))
           AND (OLD.status IS DISTINCT FROM NEW.status OR OLD.lease_owner <> NEW.lease_owner
                OR OLD.wake_at IS DISTINCT FROM NEW.wake_at))
          OR (NEW.cancel_requested AND NOT OLD.cancel_requested))
    EXECUTE FUNCTION hitch_notify_wake();
