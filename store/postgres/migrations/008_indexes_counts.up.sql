-- Every statement on a hot path reads an index, whatever the number of
-- runs (the plan test checks each one on a filled store).

-- A family's runs in the lists' order: a parent's children, a root's
-- descendants. Statements on children name parent_id <> '' so that the
-- partial index applies.
DROP INDEX hitch_runs_parent;
CREATE INDEX hitch_runs_parent ON hitch_runs (parent_id, created_at DESC, id DESC) WHERE parent_id <> '';
DROP INDEX hitch_runs_root;
CREATE INDEX hitch_runs_root ON hitch_runs (root_id, created_at DESC, id DESC);

-- Lists by status (one status at a time; a list of several merges one
-- walk each) and by agent, of all tenants or of one.
DROP INDEX hitch_runs_tenant_status;
CREATE INDEX hitch_runs_status_newest ON hitch_runs (status, created_at DESC, id DESC);
CREATE INDEX hitch_runs_tenant_status ON hitch_runs (tenant, status, created_at DESC, id DESC);
CREATE INDEX hitch_runs_agent_newest ON hitch_runs (agent, created_at DESC, id DESC);
CREATE INDEX hitch_runs_tenant_agent ON hitch_runs (tenant, agent, created_at DESC, id DESC);

-- Retention looks only at settled roots, oldest first.
CREATE INDEX hitch_runs_settled_roots ON hitch_runs (created_at, seq)
    WHERE parent_id = '' AND status IN ('completed', 'failed', 'cancelled', 'answer_invalid', 'budget_exhausted');

-- Runs by tenant and status, so that counting reads a few rows instead of
-- every run. A status change only inserts a row of deltas (no two writers
-- wait on one counter row); every 1024th delta folds the deltas into
-- hitch_run_counts, one folder at a time. A count is the sum of both.
CREATE TABLE hitch_run_counts (
    tenant text   NOT NULL,
    status text   NOT NULL,
    n      bigint NOT NULL,
    PRIMARY KEY (tenant, status)
);

CREATE TABLE hitch_run_count_deltas (
    id     bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant text    NOT NULL,
    status text    NOT NULL,
    d      integer NOT NULL
);

INSERT INTO hitch_run_counts (tenant, status, n) SELECT tenant, status, count(*) FROM hitch_runs GROUP BY tenant, status;

CREATE FUNCTION hitch_run_counts_fold() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF pg_try_advisory_xact_lock(hashtextextended('hitch_run_counts ' || current_schema(), 0)) THEN
        WITH d AS (DELETE FROM hitch_run_count_deltas RETURNING tenant, status, d)
        INSERT INTO hitch_run_counts AS c (tenant, status, n)
        SELECT tenant, status, sum(d) FROM d GROUP BY tenant, status ORDER BY tenant, status
        ON CONFLICT (tenant, status) DO UPDATE SET n = c.n + excluded.n;
    END IF;
END
$$;

CREATE FUNCTION hitch_run_counts_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    last bigint;
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO hitch_run_count_deltas (tenant, status, d) VALUES (NEW.tenant, NEW.status, 1) RETURNING id INTO last;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO hitch_run_count_deltas (tenant, status, d) VALUES (OLD.tenant, OLD.status, -1) RETURNING id INTO last;
    ELSE
        INSERT INTO hitch_run_count_deltas (tenant, status, d) VALUES (OLD.tenant, OLD.status, -1), (NEW.tenant, NEW.status, 1);
        last := currval(pg_get_serial_sequence('hitch_run_count_deltas', 'id'));
    END IF;
    IF last % 1024 < 2 THEN
        PERFORM hitch_run_counts_fold();
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER hitch_run_counts_insert AFTER INSERT ON hitch_runs
    FOR EACH ROW EXECUTE FUNCTION hitch_run_counts_change();
CREATE TRIGGER hitch_run_counts_delete AFTER DELETE ON hitch_runs
    FOR EACH ROW EXECUTE FUNCTION hitch_run_counts_change();
CREATE TRIGGER hitch_run_counts_update AFTER UPDATE OF status, tenant ON hitch_runs
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.tenant IS DISTINCT FROM NEW.tenant)
    EXECUTE FUNCTION hitch_run_counts_change();
