package storetest

import (
	"testing"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// CheckTenantMigration checks a store opened on a schema written before
// tenants that held a queued run "old", started with the input "Fix the
// build", and a session "s": after the migration both belong to the
// default tenant and are listed under it, the run has its title, and a
// child of the run takes its tenant.
func CheckTenantMigration(t *testing.T, s store.Store) {
	t.Helper()
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
	sess, err := face[store.SessionStore](t, s, "store.SessionStore").SessionGet(ctx, "s")
	if err != nil || sess.Tenant != hitchtype.DefaultTenant {
		t.Fatalf("old session: tenant %q, %v", sess.Tenant, err)
	}
	kid, _, err := s.RunCreate(ctx, store.RunCreateParams{ID: "kid", RootID: "old", ParentID: "old", Depth: 1,
		Agent: "a", Entries: []store.EntryInput{{Kind: "run.started", Data: []byte(`{}`)}}})
	if err != nil || kid.Tenant != hitchtype.DefaultTenant {
		t.Fatalf("child of an old run: tenant %q, %v", kid.Tenant, err)
	}
}

// CheckForkMigration checks a store opened on a schema written before runs
// kept their fork's source, that held the runs "src", "fork" and "odd",
// each with a run.started: fork's names src as its source, odd's names
// none (a null), src's has no such field. After the migration fork has
// its source and the others have none.
func CheckForkMigration(t *testing.T, s store.Store) {
	t.Helper()
	for id, want := range map[string]*hitchtype.ForkedFrom{"src": nil, "odd": nil, "fork": {Run: "src", Pos: 1, Replay: true}} {
		run, err := s.RunGet(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if (want == nil) != (run.ForkedFrom == nil) || want != nil && *want != *run.ForkedFrom {
			t.Errorf("%s: forked from %+v, want %+v", id, run.ForkedFrom, want)
		}
	}
}
