-- Runs that work a session's submission, found by their first entry.
-- Retention keeps them, and asks for them by run on every batch; without
-- this index PostgreSQL may answer by reading the whole journal.
CREATE INDEX hitch_journal_session_starts ON hitch_journal (run_seq)
    WHERE pos = 1 AND coalesce(data->>'session', '') <> '';
