-- Who asked to cancel a run and why, as the first request said: the
-- runner that ends the run journals them in its outcome.
ALTER TABLE runs ADD COLUMN cancel_by TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN cancel_reason TEXT NOT NULL DEFAULT '';

-- Runs by how they ended (a completed run's max_turns stop, say) read this
-- index; the filter repeats its expression word for word.
CREATE INDEX runs_tenant_reason ON runs (tenant, status, coalesce(json_extract(outcome, '$.reason'), ''), created_at, id);
