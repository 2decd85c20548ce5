-- Every statement on a hot path reads an index, whatever the number of
-- runs (the plan test checks each one on a filled store).

-- A family's runs in the lists' order: a parent's children, a root's
-- descendants. Statements on children name parent_id <> '' so that the
-- partial index applies.
DROP INDEX runs_parent;
CREATE INDEX runs_parent ON runs (parent_id, created_at DESC, id DESC) WHERE parent_id <> '';
DROP INDEX runs_root;
CREATE INDEX runs_root ON runs (root_id, created_at DESC, id DESC);

-- Lists by status (one status at a time; a list of several merges one
-- walk each) and by agent, of all tenants or of one.
DROP INDEX runs_tenant_status;
CREATE INDEX runs_status_newest ON runs (status, created_at DESC, id DESC);
CREATE INDEX runs_tenant_status ON runs (tenant, status, created_at DESC, id DESC);
CREATE INDEX runs_agent_newest ON runs (agent, created_at DESC, id DESC);
CREATE INDEX runs_tenant_agent ON runs (tenant, agent, created_at DESC, id DESC);

-- Retention looks only at settled roots, oldest first.
CREATE INDEX runs_settled_roots ON runs (created_at)
    WHERE parent_id = '' AND status IN ('completed', 'failed', 'cancelled', 'answer_invalid', 'budget_exhausted');

-- Runs by tenant and status, kept by triggers in the transaction of every
-- change, so that counting reads a few rows instead of every run.
CREATE TABLE run_counts (
    tenant TEXT    NOT NULL,
    status TEXT    NOT NULL,
    n      INTEGER NOT NULL,
    PRIMARY KEY (tenant, status)
) STRICT, WITHOUT ROWID;

INSERT INTO run_counts (tenant, status, n) SELECT tenant, status, count(*) FROM runs GROUP BY tenant, status;

CREATE TRIGGER run_counts_insert AFTER INSERT ON runs BEGIN
    INSERT INTO run_counts (tenant, status, n) VALUES (NEW.tenant, NEW.status, 1)
        ON CONFLICT (tenant, status) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER run_counts_update AFTER UPDATE OF status, tenant ON runs
    WHEN OLD.status <> NEW.status OR OLD.tenant <> NEW.tenant BEGIN
    UPDATE run_counts SET n = n - 1 WHERE tenant = OLD.tenant AND status = OLD.status;
    INSERT INTO run_counts (tenant, status, n) VALUES (NEW.tenant, NEW.status, 1)
        ON CONFLICT (tenant, status) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER run_counts_delete AFTER DELETE ON runs BEGIN
    UPDATE run_counts SET n = n - 1 WHERE tenant = OLD.tenant AND status = OLD.status;
END;
