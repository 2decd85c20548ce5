package storetest

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// testScale checks what stores answer from indexes and counters rather
// than by reading every run: lists by several statuses, oldest first, and
// counts that follow every status change.
func testScale(t *testing.T, open opener) {
	runCases(t, open, plainEnv, []testCase[*env]{
		{"Statuses", testListStatuses},
		{"Oldest", testListOldest},
		{"CountsFollow", testCountsFollow},
	})
}

// mixedRuns makes 40 runs of two tenants, several per clock reading, and
// moves some of them on: claimed (running), parked (waiting), ended
// (completed). It returns every run as it stands, newest first.
func (e *env) mixedRuns() []store.Run {
	e.t.Helper()
	for i := range 40 {
		if i%3 == 0 {
			e.tick()
		}
		id := fmt.Sprintf("m%02d", (i*13)%40)
		e.createIn(id, []string{"t1", "t2"}[i%2], "a")
		switch i % 4 {
		case 1:
			e.claim(id, "me", longTTL)
		case 2:
			l := e.claim(id, "me", longTTL)
			e.append(l, store.JournalAppendParams{RunID: id, Token: l.Token, After: 1, Entries: entries("park", 1),
				Status: hitchtype.StatusWaiting})
		case 3:
			l := e.claim(id, "me", longTTL)
			e.append(l, store.JournalAppendParams{RunID: id, Token: l.Token, After: 1, Entries: entries("end", 1),
				Status: hitchtype.StatusCompleted, Outcome: []byte(`{}`)})
		}
	}
	return e.list(store.RunListParams{Limit: 100})
}

func keep(rs []store.Run, tenant string, statuses ...hitchtype.Status) []string {
	var out []string
	for _, r := range rs {
		if (tenant == "" || r.Tenant == tenant) && (len(statuses) == 0 || slices.Contains(statuses, r.Status)) {
			out = append(out, r.ID)
		}
	}
	return out
}

func testListStatuses(t *testing.T, e *env) {
	all := e.mixedRuns()
	q, r, w, c := hitchtype.StatusQueued, hitchtype.StatusRunning, hitchtype.StatusWaiting, hitchtype.StatusCompleted
	for _, tenant := range []string{"", "t1"} {
		for _, sts := range [][]hitchtype.Status{{w}, {q, w}, {c, r, q}, {w, w, q}, {q, r, w, c}} {
			want := keep(all, tenant, sts...)
			for _, limit := range []int{1, 3, 100} {
				got := runIDs(e.pages(store.RunListParams{Tenant: tenant, Statuses: sts, Limit: limit}, 100))
				if !slices.Equal(got, want) {
					t.Fatalf("tenant %q, statuses %v, pages of %d: %v, want %v", tenant, sts, limit, got, want)
				}
			}
		}
	}
}

func testListOldest(t *testing.T, e *env) {
	all := e.mixedRuns()
	w, q := hitchtype.StatusWaiting, hitchtype.StatusQueued
	for _, tenant := range []string{"", "t2"} {
		for _, sts := range [][]hitchtype.Status{nil, {w}, {w, q}} {
			want := keep(all, tenant, sts...)
			slices.Reverse(want)
			for _, limit := range []int{1, 4, 100} {
				got := runIDs(e.pages(store.RunListParams{Tenant: tenant, Statuses: sts, Oldest: true, Limit: limit}, 100))
				if !slices.Equal(got, want) {
					t.Fatalf("tenant %q, statuses %v, oldest first in pages of %d: %v, want %v", tenant, sts, limit, got, want)
				}
			}
		}
	}
}

// testCountsFollow checks the counts against the runs listed, after each
// kind of change: creation, claim, park, end, cancel, release, prune.
func testCountsFollow(t *testing.T, e *env) {
	check := func(when string) {
		t.Helper()
		all := e.pages(store.RunListParams{Limit: 50}, 100)
		for _, tenant := range []string{"", "t1", "t2", "t3"} {
			want := map[hitchtype.Status]int{}
			for _, r := range all {
				if tenant == "" || r.Tenant == tenant {
					want[r.Status]++
				}
			}
			got, err := store.RunCounts(e.ctx, e.s, tenant)
			if err != nil {
				t.Fatalf("%s: counts of %q: %v", when, tenant, err)
			}
			if !maps.Equal(got, want) {
				t.Fatalf("%s: counts of %q: %v, the list says %v", when, tenant, got, want)
			}
			sts := []hitchtype.Status{hitchtype.StatusWaiting, hitchtype.StatusCompleted}
			got, err = e.s.RunCountsFor(e.ctx, store.RunListParams{Tenant: tenant, Statuses: sts})
			if err != nil {
				t.Fatalf("%s: counts of %q by status: %v", when, tenant, err)
			}
			maps.DeleteFunc(want, func(s hitchtype.Status, _ int) bool { return !slices.Contains(sts, s) })
			if !maps.Equal(got, want) {
				t.Fatalf("%s: counts of %q, statuses %v: %v, the list says %v", when, tenant, sts, got, want)
			}
		}
	}
	check("empty")
	e.mixedRuns()
	check("created, claimed, parked and ended")
	// A family: a parent's end cancels its child (no status change), the
	// child's own end changes its status.
	e.createIn("p", "t3", "a")
	pl := e.claim("p", "me", longTTL)
	e.createWith(store.RunCreateParams{ID: "p.c", RootID: "p", ParentID: "p", Depth: 1, Agent: "a", Entries: entries("c", 1)})
	cl := e.claim("p.c", "me", longTTL)
	e.append(pl, store.JournalAppendParams{RunID: "p", Token: pl.Token, After: 1, Entries: entries("end", 1),
		Status: hitchtype.StatusFailed, Outcome: []byte(`{}`)})
	check("a parent ended")
	if _, err := e.s.RunRequestCancel(e.ctx, store.RunRequestCancelParams{ID: "m01"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.LeaseRelease(e.ctx, store.LeaseReleaseParams{RunID: "p.c", Owner: "me", Token: cl.Token}); err != nil {
		t.Fatal(err)
	}
	check("cancel requested, lease released")
	cl = e.claim("p.c", "me", longTTL)
	e.append(cl, store.JournalAppendParams{RunID: "p.c", Token: cl.Token, After: 1, Entries: entries("end", 1),
		Status: hitchtype.StatusCancelled, Outcome: []byte(`{}`)})
	check("child ended")
	e.tick()
	res, err := e.s.RunPrune(e.ctx, store.RunPruneParams{Before: e.now().Add(time.Microsecond), Limit: store.MaxPruneLimit})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Roots) == 0 {
		t.Fatal("prune deleted nothing")
	}
	check("pruned")
}
