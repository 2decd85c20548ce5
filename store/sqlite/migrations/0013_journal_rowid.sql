-- The journal is kept in the order it is written, with an index by (run,
-- position). Clustered by (run, position), a commit of appends from many
-- runs rewrote one journal page for each run it touched, most of each page
-- unchanged; in write order the entries of a commit fill the table's last
-- pages together, and the index takes the scattered part in small records.
-- A read of one run's journal walks the index and fetches each entry by
-- its row id.
CREATE TABLE journal_by_write (
    run_seq INTEGER NOT NULL REFERENCES runs (seq),
    pos     INTEGER NOT NULL CHECK (pos > 0),
    kind    TEXT    NOT NULL,
    at      INTEGER NOT NULL,
    data    TEXT    NOT NULL
) STRICT;

INSERT INTO journal_by_write (run_seq, pos, kind, at, data)
    SELECT run_seq, pos, kind, at, data FROM journal ORDER BY run_seq, pos;

DROP TABLE journal;

ALTER TABLE journal_by_write RENAME TO journal;

CREATE UNIQUE INDEX journal_run_pos ON journal (run_seq, pos);
