-- Who asked to cancel a run and why, as the first request said: the
-- runner that ends the run journals them in its outcome.
ALTER TABLE hitch_runs ADD COLUMN cancel_by text NOT NULL DEFAULT '';
ALTER TABLE hitch_runs ADD COLUMN cancel_reason text NOT NULL DEFAULT '';
