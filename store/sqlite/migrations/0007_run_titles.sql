-- A run's title is the head of its input (200 characters), kept with the
-- run so that the runs list can be filtered by text without reading
-- journals. Runs written before titles existed get theirs from their
-- run.started entry.
ALTER TABLE runs ADD COLUMN title TEXT NOT NULL DEFAULT '';
UPDATE runs SET title = coalesce((
    SELECT substr(json_extract(j.data, '$.input'), 1, 200)
    FROM journal AS j
    WHERE j.run_seq = runs.seq AND j.pos = 1 AND j.kind = 'run.started' AND json_valid(j.data)
), '');

-- Counts by status read this index alone, without the runs' rows.
CREATE INDEX runs_tenant_status ON runs (tenant, status);
