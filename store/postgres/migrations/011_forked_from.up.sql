-- A fork keeps where its history came from with its run, so lists and
-- reads need not open its journal: the JSON of run.started's forked_from,
-- empty for every other run. Forks made before the column existed get
-- theirs from their run.started entry.
ALTER TABLE hitch_runs ADD COLUMN forked_from text NOT NULL DEFAULT '';
UPDATE hitch_runs AS r SET forked_from = (j.data -> 'forked_from')::text
FROM hitch_journal AS j
WHERE j.run_seq = r.seq AND j.pos = 1 AND j.kind = 'run.started' AND json_typeof(j.data -> 'forked_from') = 'object';
