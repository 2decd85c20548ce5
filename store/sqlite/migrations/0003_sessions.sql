-- Sessions: one row per session. active_run names the run of the submission
-- being worked ('' when none): at most one at a time. queued counts the
-- messages in state 'queued'.
CREATE TABLE sessions (
    seq        INTEGER PRIMARY KEY,
    id         TEXT    NOT NULL UNIQUE,
    agent      TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    metadata   TEXT    NOT NULL,
    active_run TEXT    NOT NULL DEFAULT '',
    position   INTEGER NOT NULL DEFAULT 0 CHECK (position >= 0),
    queued     INTEGER NOT NULL DEFAULT 0 CHECK (queued >= 0),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;

-- What a sweeper looks at: sessions with an active run or a queued message.
CREATE INDEX sessions_busy ON sessions (id) WHERE active_run <> '' OR queued > 0;

-- A session's journal, by (session, position).
CREATE TABLE session_journal (
    session_seq INTEGER NOT NULL REFERENCES sessions (seq),
    pos         INTEGER NOT NULL CHECK (pos > 0),
    kind        TEXT    NOT NULL,
    at          INTEGER NOT NULL,
    data        TEXT    NOT NULL,
    PRIMARY KEY (session_seq, pos)
) STRICT, WITHOUT ROWID;

-- Each message's state, kept with the entries that change it.
CREATE TABLE session_messages (
    session_seq INTEGER NOT NULL REFERENCES sessions (seq),
    id          TEXT    NOT NULL,
    pos         INTEGER NOT NULL,
    mode        TEXT    NOT NULL CHECK (mode IN ('queue', 'steer', 'interrupt')),
    text        TEXT    NOT NULL,
    state       TEXT    NOT NULL CHECK (state IN ('queued', 'started', 'joined', 'removed')),
    run_id      TEXT    NOT NULL DEFAULT '',
    version     INTEGER NOT NULL,
    PRIMARY KEY (session_seq, id)
) STRICT, WITHOUT ROWID;

CREATE INDEX session_messages_queued ON session_messages (session_seq, mode = 'interrupt' DESC, pos)
    WHERE state = 'queued';
CREATE INDEX session_messages_order ON session_messages (session_seq, pos);

-- Idempotency keys of admissions, remembered until expires_at.
CREATE TABLE session_keys (
    session_seq INTEGER NOT NULL REFERENCES sessions (seq),
    key         TEXT    NOT NULL,
    pos         INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    PRIMARY KEY (session_seq, key)
) STRICT, WITHOUT ROWID;

CREATE INDEX session_keys_expiry ON session_keys (expires_at);
