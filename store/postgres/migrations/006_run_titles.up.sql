-- A run's title is the head of its input (200 characters), kept with the
-- run so that the runs list can be filtered by text without reading
-- journals. Runs written before titles existed get theirs from their
-- run.started entry.
ALTER TABLE hitch_runs ADD COLUMN title text NOT NULL DEFAULT '';
UPDATE hitch_runs AS r SET title = left(j.data ->> 'input', 200)
FROM hitch_journal AS j
WHERE j.run_seq = r.seq AND j.pos = 1 AND j.kind = 'run.started' AND j.data ->> 'input' IS NOT NULL;

-- Counts by status read this index alone, without the runs' rows.
CREATE INDEX hitch_runs_tenant_status ON hitch_runs (tenant, status);
