package storetest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

func testTenants(t *testing.T, open opener) {
	runCases(t, open, plainEnv, []testCase[*env]{
		{"CreateAndFamily", testTenantCreate},
		{"ListFilters", testTenantList},
		{"Pages", testRunPages},
		{"PagesWithInserts", testRunPagesConcurrent},
		{"Counts", testRunCounts},
		{"Sessions", testTenantSessions},
	})
}

// createIn makes a queued root run of tenant (may be "") and agent.
func (e *env) createIn(id, tenant, agent string) store.Run {
	e.t.Helper()
	return e.createWith(store.RunCreateParams{ID: id, Tenant: tenant, Agent: agent, Version: 1, Entries: entries(id, 1)})
}

// tick moves a driven clock on by a millisecond, so that runs created
// after it are newer; on a real clock it does nothing.
func (e *env) tick() {
	if e.clock != nil {
		e.clock.Add(time.Millisecond)
	}
}

func (e *env) list(p store.RunListParams) []store.Run {
	e.t.Helper()
	rs, err := e.s.RunList(e.ctx, p)
	if err != nil {
		e.t.Fatalf("run list %+v: %v", p, err)
	}
	return rs
}

func testTenantCreate(t *testing.T, e *env) {
	if r := e.createIn("plain", "", "a"); r.Tenant != hitchtype.DefaultTenant {
		t.Fatalf("a run without a tenant has tenant %q, want %q", r.Tenant, hitchtype.DefaultTenant)
	}
	root := e.createIn("root", "acme", "a")
	if root.Tenant != "acme" || e.get("root").Tenant != "acme" {
		t.Fatalf("root tenant %q, stored %q, want acme", root.Tenant, e.get("root").Tenant)
	}
	// A child takes its root's tenant, given or not; a grandchild too.
	child := e.createWith(store.RunCreateParams{ID: "child", RootID: "root", ParentID: "root", Depth: 1, Agent: "sub",
		Entries: entries("child", 1)})
	grand := e.createWith(store.RunCreateParams{ID: "grand", RootID: "root", ParentID: "child", Depth: 2, Tenant: "acme",
		Agent: "sub", Entries: entries("grand", 1)})
	if child.Tenant != "acme" || grand.Tenant != "acme" {
		t.Fatalf("child tenant %q, grandchild %q, want acme", child.Tenant, grand.Tenant)
	}
	// A child that names another tenant is refused and writes nothing.
	_, _, err := e.s.RunCreate(e.ctx, store.RunCreateParams{ID: "stray", RootID: "root", ParentID: "root", Depth: 1,
		Tenant: "other", Agent: "sub", Entries: entries("stray", 1)})
	wantErr(t, "child of another tenant", err, store.ErrTenantMismatch)
	if _, err := e.s.RunGet(e.ctx, "stray"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused child was written: %v", err)
	}
	// A repeated create returns the run as it is.
	again, created, err := e.s.RunCreate(e.ctx, store.RunCreateParams{ID: "root", Tenant: "acme", Agent: "a",
		Entries: entries("root", 1)})
	if err != nil || created || again.Tenant != "acme" {
		t.Fatalf("create again: created=%v tenant %q, %v", created, again.Tenant, err)
	}
	for _, bad := range []string{"Acme", "-x", "a b", string(make([]byte, 65))} {
		if _, _, err := e.s.RunCreate(e.ctx, store.RunCreateParams{ID: "bad", Tenant: bad, Agent: "a",
			Entries: entries("bad", 1)}); err == nil {
			t.Fatalf("create with tenant %q succeeded", bad)
		}
	}
	if _, err := e.s.RunGet(e.ctx, "bad"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a run with a bad tenant was written: %v", err)
	}
}

func testTenantList(t *testing.T, e *env) {
	e.createIn("a1", "acme", "alpha")
	e.createIn("a2", "acme", "beta")
	e.createIn("d1", "", "alpha")
	e.createIn("g1", "globex", "alpha")
	e.createWith(store.RunCreateParams{ID: "g2", RootID: "g1", ParentID: "g1", Depth: 1, Agent: "beta",
		Entries: entries("g2", 1)})
	e.claim("a2", "me", longTTL)
	running := []hitchtype.Status{hitchtype.StatusRunning}
	for _, tc := range []struct {
		name string
		p    store.RunListParams
		want []string
	}{
		{"acme", store.RunListParams{Tenant: "acme"}, []string{"a2", "a1"}},
		{"globex", store.RunListParams{Tenant: "globex"}, []string{"g2", "g1"}},
		{"default", store.RunListParams{Tenant: hitchtype.DefaultTenant}, []string{"d1"}},
		{"unknown tenant", store.RunListParams{Tenant: "initech"}, []string{}},
		{"agent", store.RunListParams{Agent: "alpha"}, []string{"g1", "d1", "a1"}},
		{"tenant and agent", store.RunListParams{Tenant: "acme", Agent: "alpha"}, []string{"a1"}},
		{"tenant and status", store.RunListParams{Tenant: "acme", Statuses: running}, []string{"a2"}},
		{"other tenant's status", store.RunListParams{Tenant: "globex", Statuses: running}, []string{}},
		{"tenant and family", store.RunListParams{Tenant: "globex", RootID: "g1"}, []string{"g2", "g1"}},
		{"family of another tenant", store.RunListParams{Tenant: "acme", RootID: "g1"}, []string{}},
		{"children of another tenant", store.RunListParams{Tenant: "acme", ParentID: "g1"}, []string{}},
	} {
		rs := e.list(tc.p)
		if got := runIDs(rs); !slices.Equal(got, tc.want) {
			t.Fatalf("%s: got %v, want %v", tc.name, got, tc.want)
		}
		for _, r := range rs {
			if tc.p.Tenant != "" && r.Tenant != tc.p.Tenant {
				t.Fatalf("%s: run %s of tenant %q leaked", tc.name, r.ID, r.Tenant)
			}
		}
	}
	for _, p := range []store.RunListParams{
		{Tenant: "Acme"}, {After: "not a cursor"}, {After: "bm90IGEgY3Vyc29y"}, {Limit: store.MaxListLimit + 1},
	} {
		if _, err := e.s.RunList(e.ctx, p); err == nil {
			t.Fatalf("list %+v succeeded", p)
		}
	}
}

// newestFirst checks that rs are in list order: CreatedAt, then ID,
// descending, with no run twice.
func newestFirst(t *testing.T, rs []store.Run) {
	t.Helper()
	for i := 1; i < len(rs); i++ {
		a, b := rs[i-1], rs[i]
		if b.CreatedAt.After(a.CreatedAt) || (sameTime(a.CreatedAt, b.CreatedAt) && b.ID >= a.ID) {
			t.Fatalf("run %s (%v) listed after %s (%v)", b.ID, b.CreatedAt, a.ID, a.CreatedAt)
		}
	}
}

// pages lists every page of p, following cursors, and returns the runs in
// order. It stops at a short page, and fails past maxPages.
func (e *env) pages(p store.RunListParams, maxPages int) []store.Run {
	e.t.Helper()
	var all []store.Run
	for range maxPages {
		rs := e.list(p)
		all = append(all, rs...)
		if len(rs) < p.Limit {
			return all
		}
		p.After = store.RunCursor(rs[len(rs)-1])
	}
	e.t.Fatalf("more than %d pages", maxPages)
	return nil
}

func testRunPages(t *testing.T, e *env) {
	// 3 tenants, several runs per clock reading (ties broken by id), ids
	// not in creation order.
	want := map[string][]string{}
	for i := range 45 {
		if i%4 == 0 {
			e.tick()
		}
		id := fmt.Sprintf("r%02d", (i*17)%45)
		tenant := []string{"t1", "t2", "t3"}[i%3]
		e.createIn(id, tenant, "a")
		want[tenant] = append(want[tenant], id)
		want[""] = append(want[""], id)
	}
	for tenant, ids := range want {
		for _, limit := range []int{1, 4, 15, 100} {
			got := e.pages(store.RunListParams{Tenant: tenant, Limit: limit}, 100)
			newestFirst(t, got)
			if g, w := slices.Sorted(slices.Values(runIDs(got))), slices.Sorted(slices.Values(ids)); !slices.Equal(g, w) {
				t.Fatalf("tenant %q, pages of %d: got %v, want %v", tenant, limit, g, w)
			}
			if whole := e.list(store.RunListParams{Tenant: tenant, Limit: 100}); !slices.Equal(runIDs(whole), runIDs(got)) {
				t.Fatalf("tenant %q, pages of %d: %v, one page %v", tenant, limit, runIDs(got), runIDs(whole))
			}
		}
	}
	// A cursor keeps its place after its run is gone from the filter.
	first := e.list(store.RunListParams{Tenant: "t1", Limit: 2})
	e.claim(first[1].ID, "me", longTTL)
	rest := e.list(store.RunListParams{Tenant: "t1", Statuses: []hitchtype.Status{hitchtype.StatusQueued},
		After: store.RunCursor(first[1]), Limit: 100})
	if len(rest) != len(want["t1"])-2 {
		t.Fatalf("after a cursor whose run left the filter: %d runs, want %d", len(rest), len(want["t1"])-2)
	}
}

// testRunPagesConcurrent pages through runs while others are created: every
// run that existed before the first page is listed exactly once, no run
// twice, and the order holds.
func testRunPagesConcurrent(t *testing.T, e *env) {
	before := map[string]bool{}
	for i := range 60 {
		if i%7 == 0 {
			e.tick()
		}
		id := fmt.Sprintf("old%02d", i)
		e.createIn(id, "acme", "a")
		before[id] = true
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%5 == 0 {
				e.tick()
			}
			id := fmt.Sprintf("new%04d", i)
			if _, _, err := e.s.RunCreate(e.ctx, store.RunCreateParams{ID: id, Tenant: "acme", Agent: "a",
				Entries: entries(id, 1)}); err != nil {
				t.Errorf("create %s: %v", id, err)
				return
			}
			if i >= 2000 {
				return
			}
		}
	})
	got := e.pages(store.RunListParams{Tenant: "acme", Limit: 7}, 1000)
	close(stop)
	wg.Wait()
	newestFirst(t, got)
	seen := map[string]bool{}
	for _, r := range got {
		if seen[r.ID] {
			t.Fatalf("run %s listed twice", r.ID)
		}
		seen[r.ID] = true
	}
	for id := range before {
		if !seen[id] {
			t.Fatalf("run %s, created before paging, is missing", id)
		}
	}
}

func testRunCounts(t *testing.T, e *env) {
	counts := func(tenant string) map[hitchtype.Status]int {
		t.Helper()
		m, err := store.RunCounts(e.ctx, e.s, tenant)
		if err != nil {
			t.Fatalf("run counts %q: %v", tenant, err)
		}
		return m
	}
	if m := counts(""); len(m) != 0 {
		t.Fatalf("counts of an empty store: %v", m)
	}
	for i := range 3 {
		e.createIn(fmt.Sprintf("a%d", i), "acme", "a")
	}
	e.createIn("g0", "globex", "a")
	e.createIn("d0", "", "a")
	e.claim("a0", "me", longTTL)
	l := e.claim("g0", "me", longTTL)
	e.append(l, store.JournalAppendParams{RunID: "g0", Token: l.Token, After: 1, Entries: entries("end", 1),
		Status: hitchtype.StatusCompleted, Outcome: []byte(`{}`)})
	for tenant, want := range map[string]map[hitchtype.Status]int{
		"acme":                  {hitchtype.StatusQueued: 2, hitchtype.StatusRunning: 1},
		"globex":                {hitchtype.StatusCompleted: 1},
		hitchtype.DefaultTenant: {hitchtype.StatusQueued: 1},
		"initech":               {},
		"":                      {hitchtype.StatusQueued: 3, hitchtype.StatusRunning: 1, hitchtype.StatusCompleted: 1},
	} {
		if got := counts(tenant); !maps.Equal(got, want) {
			t.Fatalf("counts of %q: %v, want %v", tenant, got, want)
		}
	}
	if _, err := store.RunCounts(e.ctx, e.s, "Bad Tenant"); err == nil {
		t.Fatal("counts of a bad tenant succeeded")
	}
}

func testTenantSessions(t *testing.T, e *env) {
	ss := face[store.SessionStore](t, e.s, "store.SessionStore")
	se := &sessEnv{env: e, ss: ss}
	create := func(id, tenant string) store.Session {
		t.Helper()
		s, created, err := ss.SessionCreate(e.ctx, store.SessionCreateParams{ID: id, Tenant: tenant, Agent: "agent"})
		if err != nil || !created {
			t.Fatalf("session create %q: created=%v, %v", id, created, err)
		}
		return s
	}
	if s := create("s-default", ""); s.Tenant != hitchtype.DefaultTenant {
		t.Fatalf("session without a tenant has %q", s.Tenant)
	}
	if s := create("s-acme", "acme"); s.Tenant != "acme" {
		t.Fatalf("session tenant %q, want acme", s.Tenant)
	}
	create("s-acme2", "acme")
	create("s-globex", "globex")
	if got, err := ss.SessionGet(e.ctx, "s-acme"); err != nil || got.Tenant != "acme" {
		t.Fatalf("session get: tenant %q, %v", got.Tenant, err)
	}
	if _, _, err := ss.SessionCreate(e.ctx, store.SessionCreateParams{ID: "s-bad", Tenant: "ACME", Agent: "agent"}); err == nil {
		t.Fatal("session create with a bad tenant succeeded")
	}
	for tenant, want := range map[string][]string{
		"acme":   {"s-acme", "s-acme2"},
		"globex": {"s-globex"},
		"":       {"s-acme", "s-acme2", "s-default", "s-globex"},
		"nobody": nil,
	} {
		var got []string
		after := ""
		for range 10 { // pages of one, to check the cursor with the filter
			l, err := ss.SessionList(e.ctx, store.SessionListParams{Tenant: tenant, After: after, Limit: 1})
			if err != nil {
				t.Fatalf("session list %q: %v", tenant, err)
			}
			if len(l) == 0 {
				break
			}
			if tenant != "" && l[0].Tenant != tenant {
				t.Fatalf("session %s of tenant %q leaked into %q", l[0].ID, l[0].Tenant, tenant)
			}
			got, after = append(got, l[0].ID), l[0].ID
		}
		if !slices.Equal(got, want) {
			t.Fatalf("sessions of %q: %v, want %v", tenant, got, want)
		}
	}
	if _, err := ss.SessionList(e.ctx, store.SessionListParams{Tenant: "A B"}); err == nil {
		t.Fatal("session list with a bad tenant succeeded")
	}

	// A submission's run takes the session's tenant; another is refused.
	se.admit("s-acme", "m1", hitchtype.ModeQueue)
	m := se.queued("s-acme")[0]
	p := se.startParams("s-acme", m)
	p.Run.Tenant = "globex"
	_, _, err := ss.SessionStart(e.ctx, p)
	wantErr(t, "start with another tenant", err, store.ErrTenantMismatch)
	if run := se.startNext("s-acme"); run.Tenant != "acme" || e.get(run.ID).Tenant != "acme" {
		t.Fatalf("submission run tenant %q, want acme", run.Tenant)
	}
}
