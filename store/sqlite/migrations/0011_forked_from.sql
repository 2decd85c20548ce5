-- A fork keeps where its history came from with its run, so lists and
-- reads need not open its journal: the JSON of run.started's forked_from,
-- empty for every other run. Forks made before the column existed get
-- theirs from their run.started entry.
ALTER TABLE runs ADD COLUMN forked_from TEXT NOT NULL DEFAULT '';
UPDATE runs SET forked_from = coalesce((
    SELECT json_extract(j.data, '$.forked_from')
    FROM journal AS j
    WHERE j.run_seq = runs.seq AND j.pos = 1 AND j.kind = 'run.started' AND json_valid(j.data)
        AND json_type(j.data, '$.forked_from') = 'object'
), '');
