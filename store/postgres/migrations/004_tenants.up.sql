-- Tenants: every run and session belongs to one. Rows written before
-- tenants existed belong to 'default'. A run's tenant is its root's.
ALTER TABLE hitch_runs ADD COLUMN tenant text NOT NULL DEFAULT 'default';
ALTER TABLE hitch_sessions ADD COLUMN tenant text NOT NULL DEFAULT 'default';

-- Lists are newest first by (created_at, id), so that a cursor names a
-- run by values every driver shares; one index serves all tenants and one
-- each tenant.
DROP INDEX hitch_runs_newest;
CREATE INDEX hitch_runs_newest ON hitch_runs (created_at DESC, id DESC);
CREATE INDEX hitch_runs_tenant_newest ON hitch_runs (tenant, created_at DESC, id DESC);
CREATE INDEX hitch_sessions_tenant ON hitch_sessions (tenant, id);
