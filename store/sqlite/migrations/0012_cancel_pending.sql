-- A node asks once a second which of the runs it drives have a cancel
-- requested. Only the runs with a cancel pending are in this index, so the
-- question costs the same with ten or ten thousand runs in flight.
CREATE INDEX runs_cancel_pending ON runs (lease_owner, id)
    WHERE cancel_requested = 1 AND status IN ('queued', 'running', 'waiting');
