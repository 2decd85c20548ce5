-- Sessions: one row per session. active_run names the run of the submission
-- being worked ('' when none): at most one at a time, because every change
-- of a session locks its row first. queued counts the messages in state
-- 'queued'. json (not jsonb) keeps metadata and entries as written.
CREATE TABLE hitch_sessions (
    seq        bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id         text        NOT NULL UNIQUE,
    agent      text        NOT NULL,
    version    integer     NOT NULL,
    metadata   json        NOT NULL,
    active_run text        NOT NULL DEFAULT '',
    position   bigint      NOT NULL DEFAULT 0 CHECK (position >= 0),
    queued     integer     NOT NULL DEFAULT 0 CHECK (queued >= 0),
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);

-- What a sweeper looks at: sessions with an active run or a queued message.
CREATE INDEX hitch_sessions_busy ON hitch_sessions (id) WHERE active_run <> '' OR queued > 0;

-- A session's journal, by (session, position).
CREATE TABLE hitch_session_journal (
    session_seq bigint      NOT NULL REFERENCES hitch_sessions (seq),
    pos         bigint      NOT NULL CHECK (pos > 0),
    kind        text        NOT NULL,
    at          timestamptz NOT NULL,
    data        json        NOT NULL,
    PRIMARY KEY (session_seq, pos)
);

-- Each message's state, kept with the entries that change it.
CREATE TABLE hitch_session_messages (
    session_seq bigint  NOT NULL REFERENCES hitch_sessions (seq),
    id          text    NOT NULL,
    pos         bigint  NOT NULL,
    mode        text    NOT NULL CHECK (mode IN ('queue', 'steer', 'interrupt')),
    text        text    NOT NULL,
    state       text    NOT NULL CHECK (state IN ('queued', 'started', 'joined', 'removed')),
    run_id      text    NOT NULL DEFAULT '',
    version     bigint  NOT NULL,
    PRIMARY KEY (session_seq, id)
);

CREATE INDEX hitch_session_messages_queued ON hitch_session_messages (session_seq, (mode = 'interrupt') DESC, pos)
    WHERE state = 'queued';
CREATE INDEX hitch_session_messages_order ON hitch_session_messages (session_seq, pos);

-- Idempotency keys of admissions, remembered until expires_at.
CREATE TABLE hitch_session_keys (
    session_seq bigint      NOT NULL REFERENCES hitch_sessions (seq),
    key         text        NOT NULL,
    pos         bigint      NOT NULL,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (session_seq, key)
);

CREATE INDEX hitch_session_keys_expiry ON hitch_session_keys (expires_at);
