package sqlite

import (
	"testing"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// TestTenantMigrationKeepsRows upgrades a file written before tenants: its
// runs and sessions belong to the default tenant and are listed under it.
func TestTenantMigrationKeepsRows(t *testing.T) {
	t.Parallel()
	path := oldFile(t, 4,
		`INSERT INTO runs (id, root_id, agent, version, input_hash, depth, status, position, created_at, updated_at)
			VALUES ('old', 'old', 'a', 1, '', 0, 'queued', 1, 1000, 1000)`,
		`INSERT INTO journal (run_seq, pos, kind, at, data) VALUES (1, 1, 'run.started', 1000, '{"input":"Fix the build"}')`,
		`INSERT INTO sessions (id, agent, version, metadata, created_at, updated_at) VALUES ('s', 'a', 1, '{}', 1000, 1000)`)

	s := openT(t, path)
	ctx := t.Context()
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
	// A child of the old root takes its tenant.
	kid, _, err := s.RunCreate(ctx, store.RunCreateParams{ID: "kid", RootID: "old", ParentID: "old", Depth: 1,
		Agent: "a", Entries: []store.EntryInput{{Kind: "run.started", Data: []byte(`{}`)}}})
	if err != nil || kid.Tenant != hitchtype.DefaultTenant {
		t.Fatalf("child of an old run: tenant %q, %v", kid.Tenant, err)
	}
}
