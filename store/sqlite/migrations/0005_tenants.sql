-- Tenants: every run and session belongs to one. Rows written before
-- tenants existed belong to 'default'. A run's tenant is its root's.
ALTER TABLE runs ADD COLUMN tenant TEXT NOT NULL DEFAULT 'default';
ALTER TABLE sessions ADD COLUMN tenant TEXT NOT NULL DEFAULT 'default';

-- Lists are newest first by (created_at, id), so that a cursor names a
-- run by values every driver shares; one index serves all tenants and one
-- each tenant.
DROP INDEX runs_newest;
CREATE INDEX runs_newest ON runs (created_at DESC, id DESC);
CREATE INDEX runs_tenant_newest ON runs (tenant, created_at DESC, id DESC);
CREATE INDEX sessions_tenant ON sessions (tenant, id);
