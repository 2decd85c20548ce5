-- Who asked to cancel a run and why, as the first request said: the
-- runner that ends the run journals them in its outcome.
ALTER TABLE runs ADD COLUMN cancel_by TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN cancel_reason TEXT NOT NULL DEFAULT '';
