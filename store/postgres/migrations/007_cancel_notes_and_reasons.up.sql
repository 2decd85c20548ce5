-- Who asked to cancel a run and why, as the first request said: the
-- runner that ends the run journals them in its outcome.
ALTER TABLE hitch_runs ADD COLUMN cancel_by text NOT NULL DEFAULT '';
ALTER TABLE hitch_runs ADD COLUMN cancel_reason text NOT NULL DEFAULT '';

-- Runs by how they ended (a completed run's max_turns stop, say) read this
-- index; the filter repeats its expression word for word.
CREATE INDEX hitch_runs_tenant_reason ON hitch_runs (tenant, status, (coalesce(outcome ->> 'reason', '')), created_at, id);
