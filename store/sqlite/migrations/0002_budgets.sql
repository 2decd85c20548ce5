-- A family's budget: limits and use, kept with its root run. Both are JSON
-- objects of store.Budget.
CREATE TABLE budgets (
    root_seq INTEGER PRIMARY KEY REFERENCES runs (seq),
    limits   TEXT NOT NULL,
    used     TEXT NOT NULL
) STRICT;
