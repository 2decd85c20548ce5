-- Runs: one row per run. Times are microseconds since the Unix epoch (UTC);
-- 0 stands for "not set". Text columns use '' for "none" so that queries never
-- have to reason about NULL.
CREATE TABLE runs (
    seq              INTEGER PRIMARY KEY,
    id               TEXT    NOT NULL UNIQUE,
    root_id          TEXT    NOT NULL,
    parent_id        TEXT    NOT NULL DEFAULT '',
    depth            INTEGER NOT NULL CHECK (depth >= 0),
    agent            TEXT    NOT NULL,
    version          INTEGER NOT NULL,
    input_hash       TEXT    NOT NULL,
    status           TEXT    NOT NULL CHECK (status IN (
                         'queued', 'running', 'waiting', 'completed', 'failed',
                         'cancelled', 'answer_invalid', 'budget_exhausted')),
    position         INTEGER NOT NULL CHECK (position >= 0),
    lease_owner      TEXT    NOT NULL DEFAULT '',
    lease_token      INTEGER NOT NULL DEFAULT 0,
    lease_expires    INTEGER NOT NULL DEFAULT 0,
    wake_at          INTEGER NOT NULL DEFAULT 0,
    cancel_requested INTEGER NOT NULL DEFAULT 0 CHECK (cancel_requested IN (0, 1)),
    outcome          TEXT,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
) STRICT;

CREATE INDEX runs_newest ON runs (created_at DESC, seq DESC);
CREATE INDEX runs_parent ON runs (parent_id, created_at DESC, seq DESC) WHERE parent_id <> '';
CREATE INDEX runs_root ON runs (root_id);
-- The two halves of "due": leased states whose lease ran out, and waiting
-- runs whose timer came.
CREATE INDEX runs_lease_due ON runs (lease_expires) WHERE status IN ('queued', 'running');
CREATE INDEX runs_wake_due ON runs (wake_at) WHERE status = 'waiting' AND wake_at > 0;

-- The journal is clustered by (run, position) so a read by offset is one
-- range scan.
CREATE TABLE journal (
    run_seq INTEGER NOT NULL REFERENCES runs (seq),
    pos     INTEGER NOT NULL CHECK (pos > 0),
    kind    TEXT    NOT NULL,
    at      INTEGER NOT NULL,
    data    TEXT    NOT NULL,
    PRIMARY KEY (run_seq, pos)
) STRICT, WITHOUT ROWID;
