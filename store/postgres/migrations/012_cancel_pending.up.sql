-- A node asks once a second which of the runs it drives have a cancel
-- requested. Only the runs with a cancel pending are in this index, so the
-- question costs the same with ten or ten thousand runs in flight.
CREATE INDEX hitch_runs_cancel_pending ON hitch_runs (lease_owner, id)
    WHERE cancel_requested AND status IN ('queued', 'running', 'waiting');
