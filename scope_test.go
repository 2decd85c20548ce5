package hitch_test

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/sessions"
	"github.com/hitch-dev/hitch/triggers"
)

// TestScopeRoleTable: every method of Scope has its row in the role table
// and every row is a method, so a method added to the view cannot go
// without a deliberate role, and a row left behind by a removed method
// fails. Methods that reach nothing (Can, Principal) have no row.
func TestScopeRoleTable(t *testing.T) {
	t.Parallel()
	rows := hitch.ScopeRoles()
	typ := reflect.TypeFor[*hitch.Scope]()
	if typ.NumMethod() < 10 {
		t.Fatalf("Scope has %d methods: the walk found nothing", typ.NumMethod())
	}
	// The clients' methods keep the rows of the Scope methods they were
	// (a trigger's: Runtime's).
	sessionRows := map[string]string{"Open": "OpenSession", "Get": "GetSession", "List": "Sessions",
		"Journal": "SessionJournal", "Status": "SessionStatus", "Await": "AwaitSession", "Cost": "SessionCost"}
	methods := map[string]bool{}
	check := func(owner, name, row string) {
		methods[row] = true
		if _, ok := rows[row]; !ok {
			t.Errorf("%s.%s has no row in the role table", owner, name)
		}
	}
	for i := range typ.NumMethod() {
		name := typ.Method(i).Name
		if name == "Can" || name == "Principal" || name == "Sessions" || name == "Triggers" {
			continue
		}
		check("Scope", name, name)
	}
	ses := reflect.TypeFor[sessions.Client]()
	for i := range ses.NumMethod() {
		name := ses.Method(i).Name
		check("Scope.Sessions()", name, cmp.Or(sessionRows[name], name))
	}
	trs := reflect.TypeFor[triggers.Client]()
	for i := range trs.NumMethod() {
		name := trs.Method(i).Name
		check("Scope.Triggers()", name, name+map[bool]string{true: "Triggers", false: "Trigger"}[name == "List"])
	}
	for name, role := range rows {
		if !methods[name] {
			t.Errorf("the role table's row %s (%s) is not a method of Scope", name, role)
		}
	}
	if hitch.RoleFor("NoSuchMethod") != hitch.RoleAdmin {
		t.Error("a method without a row does not need admin")
	}
}

// bossOf42 is an agent "boss" that asks its sub-agent "researcher" once,
// hears "42", and answers "42 it is".
func bossOf42(t *testing.T) *hitch.Agent {
	t.Helper()
	kid := child(t, hitch.Spec{Model: scripted.New("kid", scripted.Script{Turns: []scripted.Turn{{Text: "42"}}})})
	return build(t, hitch.Spec{Name: "boss", Model: scripted.New("boss", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{delegate("find it")}}, {Text: "42 it is"},
	}}), SubAgents: []*hitch.Agent{kid}})
}

// TestScopeTenants: two tenants use the same run id and the same session id
// without meeting; each reaches its own only, in its own ids, and the
// other's is exactly as missing as an id nobody uses.
func TestScopeTenants(t *testing.T) {
	t.Parallel()
	boss := bossOf42(t)
	rt, _ := setup(t, boss)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	acme := rt.As(hitch.Principal{Name: "a", Tenant: "acme", Role: hitch.RoleAdmin})
	globex := rt.As(hitch.Principal{Name: "g", Tenant: "globex", Role: hitch.RoleAdmin})
	def := rt.As(hitch.Principal{Name: "d", Role: hitch.RoleAdmin})
	all := rt.As(hitch.Principal{Name: "local", Tenant: hitch.AllTenants, Role: hitch.RoleAdmin})

	for _, c := range []struct {
		sc    *hitch.Scope
		input string
	}{{acme, "acme's"}, {globex, "globex's"}, {def, "default's"}} {
		res, err := c.sc.Start(ctx, boss, c.input, hitch.WithID("r1"))
		if err != nil || !res.Created || res.Run.ID != "r1" {
			t.Fatalf("start r1 for %s: %+v, %v", c.input, res, err)
		}
		run, err := c.sc.Await(ctx, "r1")
		if err != nil || run.Status != hitchtype.StatusCompleted || run.Title != c.input || run.ID != "r1" || run.RootID != "r1" {
			t.Fatalf("r1 of %s: %+v, %v", c.input, run, err)
		}
		// The sub-agent's run follows its parent's id.
		page, _, err := c.sc.Runs(ctx, hitch.RunsParams{RootID: "r1"})
		if err != nil || !slices.Equal(ids(page), []string{"r1.t1c1", "r1"}) {
			t.Fatalf("family of r1 for %s: %v, %v", c.input, ids(page), err)
		}
		if page[0].ParentID != "r1" || page[0].RootID != "r1" {
			t.Fatalf("the child of r1 for %s: %+v", c.input, page[0])
		}
		es, err := c.sc.Journal(ctx, "r1.t1c1", 0, 10)
		if err != nil || len(es) == 0 || es[0].RunID != "r1.t1c1" {
			t.Fatalf("journal of r1.t1c1 for %s: %+v, %v", c.input, es, err)
		}
		// Starting it again is idempotent in the tenant's namespace.
		again, err := c.sc.Start(ctx, boss, c.input, hitch.WithID("r1"))
		if err != nil || again.Created || !again.SameInput {
			t.Fatalf("start r1 again for %s: %+v, %v", c.input, again, err)
		}
	}
	// Everything is stored apart; the local principal sees stored ids.
	for _, id := range []string{"acme~r1", "acme~r1.t1c1", "globex~r1", "r1", "r1.t1c1"} {
		if _, err := all.Get(ctx, id); err != nil {
			t.Errorf("stored %s: %v", id, err)
		}
	}
	// A tenant cannot name another's stored id, and another's id is as
	// missing as a free one.
	_, errTheirs := acme.Get(ctx, "globex~r1")
	_, errNone := acme.Get(ctx, "zz")
	if !errors.Is(errTheirs, hitch.ErrNotFound) || !errors.Is(errNone, hitch.ErrNotFound) {
		t.Fatalf("acme reading globex~r1: %v; zz: %v", errTheirs, errNone)
	}
	// A run stored with a plain id by the library belongs to its tenant,
	// which reaches it by that id; the default tenant's same id goes to
	// its own namespace and answers as a free id would.
	if _, err := rt.Start(ctx, boss, "plain", hitch.WithID("p1"), hitch.WithTenant("acme")); err != nil {
		t.Fatal(err)
	}
	if r, err := acme.Get(ctx, "p1"); err != nil || r.Title != "plain" {
		t.Fatalf("acme's plain p1: %+v, %v", r, err)
	}
	if _, err := def.Get(ctx, "p1"); !errors.Is(err, hitch.ErrNotFound) {
		t.Fatalf("default reading acme's plain p1: %v", err)
	}
	res, err := def.Start(ctx, boss, "mine", hitch.WithID("p1"))
	if err != nil || !res.Created || res.Run.ID != "p1" {
		t.Fatalf("default starting p1: %+v, %v", res, err)
	}
	if _, err := all.Get(ctx, "default~p1"); err != nil {
		t.Fatalf("default's p1 is not in its namespace: %v", err)
	}
	if _, err := def.Await(ctx, "p1"); err != nil {
		t.Fatal(err)
	}
	// Lists hold the tenant's own, in its ids.
	page, _, err := acme.Runs(ctx, hitch.RunsParams{})
	if err != nil || !slices.Equal(ids(page), []string{"p1.t1c1", "p1", "r1.t1c1", "r1"}) {
		t.Fatalf("acme's runs: %v, %v", ids(page), err)
	}
	if page, _, err := acme.Runs(ctx, hitch.RunsParams{Tenant: "globex"}); err != nil || slices.Contains(ids(page), "globex~r1") {
		t.Fatalf("acme listing globex: %v, %v", ids(page), err)
	}

	// Sessions: the same id in two tenants.
	for _, sc := range []*hitch.Scope{acme, globex} {
		ses, created, err := sc.Sessions().Open(ctx, boss, sessions.Options{ID: "s1"})
		if err != nil || !created || ses.ID != "s1" {
			t.Fatalf("open s1: %+v %v %v", ses, created, err)
		}
		if _, created, err := sc.Sessions().Open(ctx, boss, sessions.Options{ID: "s1"}); err != nil || created {
			t.Fatalf("open s1 again: created %v, %v", created, err)
		}
	}
	if _, err := acme.Sessions().Send(ctx, "s1", "hello", sessions.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	st, err := acme.Sessions().Await(ctx, "s1")
	if err != nil || len(st.Submissions) != 1 || st.Session.ID != "s1" {
		t.Fatalf("acme's s1: %+v, %v", st, err)
	}
	if r, err := acme.Get(ctx, st.Submissions[0].RunID); err != nil || r.Tenant != "acme" {
		t.Fatalf("acme's submission run %s: %+v, %v", st.Submissions[0].RunID, r, err)
	}
	if _, err := globex.Get(ctx, st.Submissions[0].RunID); !errors.Is(err, hitch.ErrNotFound) {
		t.Fatalf("globex reading acme's submission run: %v", err)
	}
	if st, err := globex.Sessions().Status(ctx, "s1"); err != nil || len(st.Submissions) != 0 {
		t.Fatalf("globex's s1: %+v, %v", st, err)
	}
	list, _, err := acme.Sessions().List(ctx, sessions.ListParams{})
	if err != nil || len(list) != 1 || list[0].ID != "s1" || list[0].Tenant != "acme" {
		t.Fatalf("acme's sessions: %+v, %v", list, err)
	}
}

// TestScopeRoles: each role reaches what the table gives it and is refused
// the rest with ErrForbidden, before anything is read or written; a
// principal with an unknown role or a bad tenant is served nothing.
func TestScopeRoles(t *testing.T) {
	t.Parallel()
	a := build(t, hitch.Spec{Model: scripted.New("m", scripted.Script{Turns: []scripted.Turn{{Text: "done"}}})})
	rt, _ := setup(t, a)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	admin := rt.As(hitch.Principal{Name: "adm", Tenant: "acme", Role: hitch.RoleAdmin})
	if _, err := admin.Start(ctx, a, "go", hitch.WithID("r1")); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Await(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	viewer := rt.As(hitch.Principal{Name: "v", Tenant: "acme", Role: hitch.RoleViewer})
	op := rt.As(hitch.Principal{Name: "o", Tenant: "acme", Role: hitch.RoleOperator})
	if _, err := viewer.Get(ctx, "r1"); err != nil {
		t.Fatalf("a viewer reads: %v", err)
	}
	_, err := viewer.Start(ctx, a, "go")
	var fe *hitch.ForbiddenError
	if !errors.As(err, &fe) || fe.Need != hitch.RoleAdmin || !errors.Is(err, hitch.ErrForbidden) {
		t.Fatalf("a viewer starting: %v", err)
	}
	if _, err := viewer.Cancel(ctx, "r1"); !errors.Is(err, hitch.ErrForbidden) {
		t.Fatalf("a viewer cancelling: %v", err)
	}
	if _, err := op.Cancel(ctx, "r1"); err != nil {
		t.Fatalf("an operator cancelling an ended run: %v", err)
	}
	if _, err := op.Start(ctx, a, "go"); !errors.Is(err, hitch.ErrForbidden) {
		t.Fatalf("an operator starting: %v", err)
	}
	// A WithTenant naming another tenant is refused.
	if _, err := admin.Start(ctx, a, "go", hitch.WithTenant("globex")); !errors.Is(err, hitch.ErrForbidden) {
		t.Fatalf("acme starting for globex: %v", err)
	}
	for _, p := range []hitch.Principal{{Name: "x", Role: "root"}, {Name: "x", Tenant: "Bad Tenant", Role: hitch.RoleAdmin}, {Name: "x"}} {
		if _, err := rt.As(p).Get(ctx, "r1"); !errors.Is(err, hitch.ErrForbidden) {
			t.Errorf("%+v reading: %v", p, err)
		}
	}
	// The refusal names roles, never what the caller sent.
	if _, err := viewer.Start(ctx, a, "secret-input", hitch.WithID("secret-id")); strings.Contains(err.Error(), "secret") {
		t.Fatalf("refusal echoes the caller: %v", err)
	}
}

func TestTenantOfRunsAndSubAgents(t *testing.T) {
	t.Parallel()
	boss := bossOf42(t)
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
