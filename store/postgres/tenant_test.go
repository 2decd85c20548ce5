package postgres_test

import (
	"testing"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// TestTenantMigrationKeepsRows upgrades a schema written before tenants:
// its runs and sessions belong to the default tenant and are listed under
// it.
func TestTenantMigrationKeepsRows(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := oldSchema(t, 3,
		`INSERT INTO hitch_runs (id, root_id, agent, version, input_hash, depth, status, position, created_at, updated_at)
			VALUES ('old', 'old', 'a', 1, '', 0, 'queued', 1, now(), now())`,
		`INSERT INTO hitch_journal (run_seq, pos, kind, at, data) SELECT seq, 1, 'run.started', now(), '{"input":"Fix the build"}' FROM hitch_runs`,
		`INSERT INTO hitch_sessions (id, agent, version, metadata, created_at, updated_at) VALUES ('s', 'a', 1, '{}', now(), now())`)

	s := openIn(t, schema)
	defer s.Close()
	run, err := s.RunGet(ctx, "old")
	if err != nil || run.Tenant != hitchtype.DefaultTenant {
		t.Fatalf("old run: tenant %q, %v", run.Tenant, err)
	}
	if run.Title != "Fix the build" {
		t.Fatalf("old run: title %q, want the head of its input", run.Title)
	}
	rs, err := s.RunList(ctx, store.RunListParams{Tenant: hitchtype.DefaultTenant})
	if err != nil || len(rs) != 1 || rs[0].ID != "old" {
		t.Fatalf("default tenant's runs: %v, %v", rs, err)
	}
	sess, err := s.SessionGet(ctx, "s")
	if err != nil || sess.Tenant != hitchtype.DefaultTenant {
		t.Fatalf("old session: tenant %q, %v", sess.Tenant, err)
	}
}
