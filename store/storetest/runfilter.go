package storetest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

func testRunFilters(t *testing.T, open opener) {
	runCases(t, open, plainEnv, []testCase[*env]{
		{"Title", testRunTitle},
		{"Time", testRunListTime},
		{"Text", testRunListText},
		{"CountsFor", testRunCountsFor},
		{"JournalKinds", testJournalKinds},
	})
}

// createTitled makes a queued root run of tenant "acme" with a title.
func (e *env) createTitled(id, agent, title string) store.Run {
	e.t.Helper()
	return e.createWith(store.RunCreateParams{ID: id, Tenant: "acme", Agent: agent, Version: 1, Title: title,
		Entries: entries(id, 1)})
}

func testRunTitle(t *testing.T, e *env) {
	long := strings.Repeat("é", store.MaxTitleRunes+50)
	for _, c := range []struct{ id, in, want string }{
		{"none", "", ""},
		{"short", "Summarise the report", "Summarise the report"},
		{"long", long, strings.Repeat("é", store.MaxTitleRunes)},
		{"bad-utf8", "ab\xffcd", "ab\uFFFDcd"},
	} {
		r := e.createTitled(c.id, "a", c.in)
		if r.Title != c.want || e.get(c.id).Title != c.want {
			t.Fatalf("%s: title %q, stored %q, want %q", c.id, r.Title, e.get(c.id).Title, c.want)
		}
	}
}

func testRunListTime(t *testing.T, e *env) {
	var runs []store.Run
	for i := range 5 {
		runs = append(runs, e.createTitled(fmt.Sprintf("r%d", i), "a", ""))
		e.tick()
	}
	// On a real clock two runs may share a time: what each filter keeps is
	// judged from the times the store gave.
	want := func(keep func(time.Time) bool) []string {
		ids := []string{}
		for i := len(runs) - 1; i >= 0; i-- {
			if keep(runs[i].CreatedAt) {
				ids = append(ids, runs[i].ID)
			}
		}
		return ids
	}
	from, to := runs[1].CreatedAt, runs[3].CreatedAt
	for _, tc := range []struct {
		name string
		p    store.RunListParams
		keep func(time.Time) bool
	}{
		{"after", store.RunListParams{CreatedAfter: from}, func(at time.Time) bool { return !at.Before(from) }},
		{"before", store.RunListParams{CreatedBefore: to}, func(at time.Time) bool { return at.Before(to) }},
		{"between", store.RunListParams{CreatedAfter: from, CreatedBefore: to},
			func(at time.Time) bool { return !at.Before(from) && at.Before(to) }},
		{"far future", store.RunListParams{CreatedAfter: runs[4].CreatedAt.Add(time.Hour)}, func(time.Time) bool { return false }},
		{"with tenant", store.RunListParams{Tenant: "acme", CreatedBefore: to}, func(at time.Time) bool { return at.Before(to) }},
		{"other tenant", store.RunListParams{Tenant: "globex", CreatedBefore: to}, func(time.Time) bool { return false }},
	} {
		got := runIDs(e.list(tc.p))
		if w := want(tc.keep); !slices.Equal(got, w) {
			t.Errorf("%s: %v, want %v", tc.name, got, w)
		}
	}
	if e.clock != nil {
		if got := runIDs(e.list(store.RunListParams{CreatedAfter: from, CreatedBefore: to})); !slices.Equal(got, []string{"r2", "r1"}) {
			t.Errorf("between on a driven clock: %v, want [r2 r1]", got)
		}
	}
	// Pages of a time window reach every run in it once.
	p := store.RunListParams{CreatedAfter: from, Limit: 1}
	var paged []string
	for range 10 {
		rs := e.list(p)
		if len(rs) == 0 {
			break
		}
		paged = append(paged, rs[0].ID)
		p.After = store.RunCursor(rs[0])
	}
	if w := want(func(at time.Time) bool { return !at.Before(from) }); !slices.Equal(paged, w) {
		t.Errorf("pages after %s: %v, want %v", from, paged, w)
	}
	// An empty window is refused, naming the fields.
	_, err := e.s.RunList(e.ctx, store.RunListParams{CreatedAfter: to, CreatedBefore: from})
	if err == nil || !strings.Contains(err.Error(), "created after") {
		t.Fatalf("created after later than created before: %v", err)
	}
}

func testRunListText(t *testing.T, e *env) {
	e.createTitled("deploy-1", "ops", "Roll out the 50% canary")
	e.tick()
	e.createTitled("triage-7", "support", "Answer ticket about refunds")
	e.tick()
	e.createTitled("report_9", "analyst", "Summarise Q3 refunds")
	e.tick()
	e.createWith(store.RunCreateParams{ID: "other", Tenant: "globex", Agent: "support", Version: 1, Title: "refunds",
		Entries: entries("other", 1)})
	for _, tc := range []struct {
		name string
		p    store.RunListParams
		want []string
	}{
		{"title, any case", store.RunListParams{Tenant: "acme", Text: "REFUNDS"}, []string{"report_9", "triage-7"}},
		{"id prefix", store.RunListParams{Tenant: "acme", Text: "deploy"}, []string{"deploy-1"}},
		{"agent", store.RunListParams{Tenant: "acme", Text: "analy"}, []string{"report_9"}},
		{"percent is literal", store.RunListParams{Tenant: "acme", Text: "50%"}, []string{"deploy-1"}},
		{"percent alone", store.RunListParams{Tenant: "acme", Text: "%"}, []string{"deploy-1"}},
		{"underscore", store.RunListParams{Tenant: "acme", Text: "t_9"}, []string{"report_9"}},
		{"underscore is literal", store.RunListParams{Tenant: "acme", Text: "e_7"}, []string{}},
		{"backslash", store.RunListParams{Tenant: "acme", Text: `\`}, []string{}},
		{"no match", store.RunListParams{Tenant: "acme", Text: "nothing like it"}, []string{}},
		{"all tenants", store.RunListParams{Text: "refunds"}, []string{"other", "report_9", "triage-7"}},
		{"with agent", store.RunListParams{Agent: "support", Text: "refunds"}, []string{"other", "triage-7"}},
		{"with status", store.RunListParams{Text: "refunds", Statuses: []hitchtype.Status{hitchtype.StatusRunning}}, []string{}},
		{"page", store.RunListParams{Text: "refunds", Limit: 2}, []string{"other", "report_9"}},
	} {
		if got := runIDs(e.list(tc.p)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, bad := range []string{strings.Repeat("x", store.MaxTextRunes+1), "a\xffb"} {
		if _, err := e.s.RunList(e.ctx, store.RunListParams{Text: bad}); err == nil || !strings.Contains(err.Error(), "text") {
			t.Errorf("text of %d bytes: %v, want an error naming text", len(bad), err)
		}
	}
}

func testRunCountsFor(t *testing.T, e *env) {
	e.createTitled("a1", "alpha", "first refund")
	e.tick()
	e.createTitled("a2", "beta", "second")
	e.tick()
	e.createTitled("a3", "alpha", "third refund")
	e.createWith(store.RunCreateParams{ID: "g1", Tenant: "globex", Agent: "alpha", Version: 1, Title: "refund",
		Entries: entries("g1", 1)})
	e.claim("a3", "me", longTTL)
	a2 := e.get("a2")
	q, r := hitchtype.StatusQueued, hitchtype.StatusRunning
	for _, tc := range []struct {
		name string
		p    store.RunListParams
		want map[hitchtype.Status]int
	}{
		{"tenant", store.RunListParams{Tenant: "acme"}, map[hitchtype.Status]int{q: 2, r: 1}},
		{"all", store.RunListParams{}, map[hitchtype.Status]int{q: 3, r: 1}},
		{"agent", store.RunListParams{Tenant: "acme", Agent: "alpha"}, map[hitchtype.Status]int{q: 1, r: 1}},
		{"text", store.RunListParams{Tenant: "acme", Text: "refund"}, map[hitchtype.Status]int{q: 1, r: 1}},
		{"status", store.RunListParams{Tenant: "acme", Statuses: []hitchtype.Status{r}}, map[hitchtype.Status]int{r: 1}},
		{"limit and cursor ignored", store.RunListParams{Tenant: "acme", Limit: 1, After: store.RunCursor(a2)}, map[hitchtype.Status]int{q: 2, r: 1}},
		{"none", store.RunListParams{Tenant: "initech"}, map[hitchtype.Status]int{}},
	} {
		got, err := e.s.RunCountsFor(e.ctx, tc.p)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !maps.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	// Counting by time agrees with listing by time.
	p := store.RunListParams{Tenant: "acme", CreatedAfter: a2.CreatedAt}
	got, err := e.s.RunCountsFor(e.ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range got {
		n += c
	}
	if listed := len(e.list(p)); n != listed {
		t.Errorf("counts after a2's time sum to %d, the list has %d", n, listed)
	}
	for _, bad := range []store.RunListParams{{Tenant: "Bad Tenant"}, {Text: strings.Repeat("x", store.MaxTextRunes+1)},
		{Statuses: []hitchtype.Status{"sleeping"}}} {
		if _, err := e.s.RunCountsFor(e.ctx, bad); err == nil {
			t.Errorf("counts with %+v succeeded", bad)
		}
	}
}

func testJournalKinds(t *testing.T, e *env) {
	l := e.createClaimed("k", "me", longTTL)
	es := []store.EntryInput{
		{Kind: "test.a", Data: data("a", 0)}, {Kind: "test.b", Data: data("b", 1)},
		{Kind: "test.c", Data: data("c", 2)}, {Kind: "test.b", Data: data("b", 3)},
	}
	e.append(l, store.JournalAppendParams{After: 1, Entries: es})
	read := func(p store.JournalReadParams) []int64 {
		t.Helper()
		p.RunID = "k"
		got, err := e.s.JournalRead(e.ctx, p)
		if err != nil {
			t.Fatalf("read %+v: %v", p, err)
		}
		pos := []int64{}
		for _, en := range got {
			pos = append(pos, en.Pos)
		}
		return pos
	}
	for _, tc := range []struct {
		name string
		p    store.JournalReadParams
		want []int64
	}{
		{"one kind", store.JournalReadParams{Kinds: []string{"test.b"}}, []int64{3, 5}},
		{"two kinds", store.JournalReadParams{Kinds: []string{"test.c", "test.k"}}, []int64{1, 4}},
		{"after", store.JournalReadParams{After: 3, Kinds: []string{"test.b"}}, []int64{5}},
		{"limit", store.JournalReadParams{Limit: 1, Kinds: []string{"test.b"}}, []int64{3}},
		{"absent kind", store.JournalReadParams{Kinds: []string{"test.z"}}, []int64{}},
		{"every kind", store.JournalReadParams{}, []int64{1, 2, 3, 4, 5}},
	} {
		if got := read(tc.p); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if _, err := e.s.JournalRead(e.ctx, store.JournalReadParams{RunID: "nope", Kinds: []string{"test.b"}}); err == nil {
		t.Error("kinds of a missing run: no error")
	} else {
		wantErr(t, "kinds of a missing run", err, store.ErrNotFound)
	}
	if _, err := e.s.JournalRead(e.ctx, store.JournalReadParams{RunID: "k", Kinds: make([]string, store.MaxReadKinds+1)}); err == nil {
		t.Error("too many kinds: no error")
	}
}
