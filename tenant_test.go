package hitch_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/sessions"
)

func TestTenantOfRunsAndSubAgents(t *testing.T) {
	t.Parallel()
	kid := child(t, hitch.Spec{Model: scripted.New("kid", scripted.Script{Turns: []scripted.Turn{{Text: "42"}}})})
	boss := build(t, hitch.Spec{Name: "boss", Model: scripted.New("boss", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{delegate("find it")}}, {Text: "42 it is"},
	}}), SubAgents: []*hitch.Agent{kid}})
	rt, _ := setup(t, boss)
	ctx := t.Context()

	run := runToRest(t, rt, boss, "what?", hitch.WithTenant("acme"))
	if run.Status != hitchtype.StatusCompleted || run.Tenant != "acme" {
		t.Fatalf("run: %s tenant %q", run.Status, run.Tenant)
	}
	kidRun, err := rt.Get(ctx, run.ID+".t1c1")
	if err != nil || kidRun.Tenant != "acme" {
		t.Fatalf("the sub-agent's run has tenant %q (%v), want its root's", kidRun.Tenant, err)
	}
	if plain := runToRest(t, rt, boss, "what?"); plain.Tenant != hitchtype.DefaultTenant {
		t.Fatalf("a run without WithTenant has tenant %q", plain.Tenant)
	}
	for _, bad := range []string{"ACME", "-acme", "a/b"} {
		if _, err := rt.Start(ctx, boss, "x", hitch.WithTenant(bad)); err == nil {
			t.Errorf("WithTenant(%q) was accepted", bad)
		}
	}
	page, next, err := rt.Runs(ctx, hitch.RunsParams{Tenant: "acme"})
	if err != nil || next != "" {
		t.Fatalf("runs of acme: next %q, %v", next, err)
	}
	if got := ids(page); !slices.Equal(got, []string{run.ID + ".t1c1", run.ID}) {
		t.Fatalf("runs of acme: %v", got)
	}
	if page, _, err := rt.Runs(ctx, hitch.RunsParams{Tenant: "globex"}); err != nil || len(page) != 0 {
		t.Fatalf("runs of globex: %v, %v", ids(page), err)
	}
	if page, _, err := rt.Runs(ctx, hitch.RunsParams{Tenant: "acme", Agent: "researcher"}); err != nil ||
		!slices.Equal(ids(page), []string{run.ID + ".t1c1"}) {
		t.Fatalf("runs of acme's researcher: %v, %v", ids(page), err)
	}
	counts, err := rt.RunCounts(ctx, "acme")
	if err != nil || !maps.Equal(counts, map[hitchtype.Status]int{hitchtype.StatusCompleted: 2}) {
		t.Fatalf("counts of acme: %v, %v", counts, err)
	}
	counts, err = rt.RunCounts(ctx, "")
	if err != nil || counts[hitchtype.StatusCompleted] != 4 {
		t.Fatalf("counts of all: %v, %v", counts, err)
	}
	if _, err := rt.RunCounts(ctx, "Nope"); err == nil {
		t.Fatal("counts of a bad tenant succeeded")
	}
}

func ids(rs []hitch.Run) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

func TestRunsPages(t *testing.T) {
	t.Parallel()
	a := build(t, hitch.Spec{Model: scripted.New("m", scripted.Script{Turns: []scripted.Turn{{Text: "done"}}})})
	rt, _ := setup(t, a)
	ctx := t.Context()
	var want []string
	for range 5 {
		want = append(want, runToRest(t, rt, a, "go", hitch.WithTenant("t1")).ID)
		runToRest(t, rt, a, "go", hitch.WithTenant("t2"))
	}
	slices.Reverse(want) // newest first
	var got []string
	after := ""
	for pages := 1; ; pages++ {
		page, next, err := rt.Runs(ctx, hitch.RunsParams{Tenant: "t1", After: after, Limit: 2})
		if err != nil || len(page) > 2 || pages > 4 {
			t.Fatalf("page %d: %v, %v", pages, ids(page), err)
		}
		for _, r := range page {
			if r.Tenant != "t1" {
				t.Fatalf("run %s of tenant %s listed for t1", r.ID, r.Tenant)
			}
		}
		got = append(got, ids(page)...)
		if after = next; after == "" {
			if pages != 3 {
				t.Errorf("%d pages, want 3", pages)
			}
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pages %v, want %v", got, want)
	}
	if _, _, err := rt.Runs(ctx, hitch.RunsParams{After: "junk"}); !errors.Is(err, hitch.ErrBadCursor) {
		t.Errorf("a bad cursor: %v, want ErrBadCursor", err)
	}
	for _, p := range []hitch.RunsParams{{After: "junk"}, {Tenant: "T1"}, {Limit: hitch.MaxPageLimit + 1}, {Limit: -1}} {
		if _, _, err := rt.Runs(ctx, p); err == nil {
			t.Errorf("runs %+v succeeded", p)
		}
	}
}

func TestPendingApprovalsByTenant(t *testing.T) {
	t.Parallel()
	var charges atomic.Int64
	a := payAgent(t, &charges, members(t), nil, hitch.Limits{})
	rt, _ := setup(t, a)
	ctx := context.Background()
	acme := runToRest(t, rt, a, "pay", hitch.WithTenant("acme"))
	globex := runToRest(t, rt, a, "pay", hitch.WithTenant("globex"))
	if acme.Status != hitchtype.StatusWaiting || globex.Status != hitchtype.StatusWaiting {
		t.Fatalf("runs are %s and %s, want both waiting", acme.Status, globex.Status)
	}
	for _, tc := range []struct {
		p    hitch.PendingApprovalsParams
		want []string
	}{
		{hitch.PendingApprovalsParams{Tenant: "acme"}, []string{acme.ID}},
		{hitch.PendingApprovalsParams{Tenant: "globex"}, []string{globex.ID}},
		{hitch.PendingApprovalsParams{}, []string{acme.ID, globex.ID}},
		{hitch.PendingApprovalsParams{Tenant: "acme", RootID: globex.ID}, []string{}},
		{hitch.PendingApprovalsParams{Tenant: "globex", RootID: globex.ID}, []string{globex.ID}},
		{hitch.PendingApprovalsParams{Tenant: "initech"}, []string{}},
	} {
		page, _, err := rt.PendingApprovals(ctx, tc.p)
		if err != nil {
			t.Fatalf("%+v: %v", tc.p, err)
		}
		got := []string{}
		for _, p := range page {
			got = append(got, p.RunID)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("pending approvals %+v: %v, want %v", tc.p, got, tc.want)
		}
	}
	if _, _, err := rt.PendingApprovals(ctx, hitch.PendingApprovalsParams{Tenant: "Acme"}); err == nil {
		t.Error("a bad tenant was accepted")
	}
}

func TestSessionTenant(t *testing.T) {
	t.Parallel()
	a := build(t, hitch.Spec{Name: "echo", Model: echo()})
	rt, _ := setup(t, a)
	ctx := t.Context()
	s, _, err := rt.Sessions().Open(ctx, a, sessions.Options{ID: "s-acme", Tenant: "acme"})
	if err != nil || s.Tenant != "acme" {
		t.Fatalf("open: tenant %q, %v", s.Tenant, err)
	}
	if d := openSession(t, rt, a, "s-default"); d.Tenant != hitchtype.DefaultTenant {
		t.Fatalf("a session without a tenant has %q", d.Tenant)
	}
	if _, _, err := rt.Sessions().Open(ctx, a, sessions.Options{ID: "s-acme", Tenant: "globex"}); !errors.Is(err, sessions.ErrTenant) {
		t.Fatalf("opening acme's session for globex: %v", err)
	}
	if _, _, err := rt.Sessions().Open(ctx, a, sessions.Options{ID: "s-acme"}); !errors.Is(err, sessions.ErrTenant) {
		t.Fatalf("opening acme's session for the default tenant: %v", err)
	}
	if _, _, err := rt.Sessions().Open(ctx, a, sessions.Options{ID: "s-bad", Tenant: "A B"}); err == nil {
		t.Fatal("a bad tenant was accepted")
	}
	send(t, rt, "s-acme", "hello", sessions.SendOptions{})
	st := awaitSession(t, rt, "s-acme")
	if len(st.Submissions) != 1 || st.Submissions[0].Status != hitchtype.StatusCompleted {
		t.Fatalf("submissions %+v", st.Submissions)
	}
	run, err := rt.Get(ctx, st.Submissions[0].RunID)
	if err != nil || run.Tenant != "acme" {
		t.Fatalf("the submission's run has tenant %q (%v), want the session's", run.Tenant, err)
	}
	for tenant, want := range map[string][]string{"acme": {"s-acme"}, "": {"s-acme", "s-default"}, "globex": {}} {
		list, _, err := rt.Sessions().List(ctx, sessions.ListParams{Tenant: tenant})
		if err != nil {
			t.Fatal(err)
		}
		got := []string{}
		for _, s := range list {
			got = append(got, s.ID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("sessions of %q: %v, want %v", tenant, got, want)
		}
	}
}
