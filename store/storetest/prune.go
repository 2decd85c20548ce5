package storetest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

func testPrune(t *testing.T, open opener) {
	runCases(t, open, plainEnv, []testCase[*env]{
		{"OnlySettledFamilies", testPruneSettled},
		{"RandomFamilies", testPruneRandom},
		{"SessionKeys", testPruneKeys},
		{"BadInput", testPruneBadInput},
	})
}

// sessionRoot creates a root run that works a session's submission.
func (e *env) sessionRoot(id string) store.Run {
	e.t.Helper()
	d, _ := json.Marshal(map[string]any{"agent": "agent", "version": 1, "input": "hi", "session": "s1"})
	return e.createWith(store.RunCreateParams{ID: id, Agent: "agent", Version: 1, InputHash: "h",
		Entries: []store.EntryInput{{Kind: hitchtype.KindRunStarted, Data: d}}})
}

func (e *env) prune(p store.RunPruneParams) store.RunPruneResult {
	e.t.Helper()
	res, err := e.s.RunPrune(e.ctx, p)
	if err != nil {
		e.t.Fatalf("run prune %+v: %v", p, err)
	}
	return res
}

func testPruneSettled(t *testing.T, e *env) {
	// Settled before the cut: two families, one with a grandchild.
	e.create("old")
	e.child("old.1", "old")
	e.child("old.1.1", "old.1")
	for _, id := range []string{"old.1.1", "old.1", "old"} {
		e.end(id, hitchtype.StatusCompleted)
	}
	e.create("old2")
	e.end("old2", hitchtype.StatusFailed)
	// Not settled: a live member, a live root, a session's run.
	e.create("live")
	e.child("live.1", "live")
	e.end("live", hitchtype.StatusCompleted) // asks live.1 to cancel; it has not ended
	e.create("waiting")
	e.wait("waiting", time.Time{})
	e.sessionRoot("sess")
	e.end("sess", hitchtype.StatusCompleted)
	// Settled, but a member ended after the cut.
	e.create("young")
	e.child("young.1", "young")
	e.end("young", hitchtype.StatusCancelled)
	e.waitPast(e.now())
	cut := e.now()
	e.waitPast(cut)
	e.end("young.1", hitchtype.StatusCompleted)

	dry := e.prune(store.RunPruneParams{Before: cut, DryRun: true})
	if !slices.Equal(dry.Roots, []string{"old", "old2"}) || dry.Runs != 4 {
		t.Fatalf("dry run = %+v, want old (3 runs) and old2", dry)
	}
	e.get("old") // a dry run deletes nothing

	first := e.prune(store.RunPruneParams{Before: cut, Limit: 1})
	if !slices.Equal(first.Roots, []string{"old"}) || first.Runs != 3 {
		t.Fatalf("limit 1 = %+v, want the oldest family, old, with its 3 runs", first)
	}
	second := e.prune(store.RunPruneParams{Before: cut})
	if !slices.Equal(second.Roots, []string{"old2"}) || second.Runs != 1 {
		t.Fatalf("second prune = %+v, want old2", second)
	}
	if again := e.prune(store.RunPruneParams{Before: cut}); len(again.Roots) != 0 || again.Runs != 0 {
		t.Fatalf("prune again = %+v, want nothing", again)
	}
	for _, id := range []string{"old", "old.1", "old.1.1", "old2"} {
		_, err := e.s.RunGet(e.ctx, id)
		wantErr(t, "run get of pruned "+id, err, store.ErrNotFound)
		_, err = e.s.JournalRead(e.ctx, store.JournalReadParams{RunID: id})
		wantErr(t, "journal read of pruned "+id, err, store.ErrNotFound)
	}
	for _, id := range []string{"live", "live.1", "waiting", "sess", "young", "young.1"} {
		if es := e.read(id, 0, 0); len(es) == 0 {
			t.Errorf("%s: kept run lost its journal", id)
		}
	}
	// Everything settles later: all of it goes but the session's run.
	e.end("live.1", hitchtype.StatusCancelled)
	e.end("waiting", hitchtype.StatusCompleted)
	late := e.now()
	e.waitPast(late)
	res := e.prune(store.RunPruneParams{Before: late.Add(time.Microsecond)})
	slices.Sort(res.Roots)
	if !slices.Equal(res.Roots, []string{"live", "waiting", "young"}) || res.Runs != 5 {
		t.Fatalf("prune after all settled = %+v", res)
	}
	e.get("sess")
	// A pruned id can be used again.
	e.create("old")
}

// testPruneRandom is a property test: over random families whose runs end
// before the cut, after it, or not at all, a prune deletes exactly the
// families whose every run ended before the cut (session runs aside), and
// every run of them, in batches of any size.
func testPruneRandom(t *testing.T, e *env) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	type member struct {
		id    string
		state int // 0 ends before the cut, 1 after it, 2 never
	}
	families := map[string][]member{}
	sessions := map[string]bool{}
	var roots []string
	for f := range 30 {
		root := fmt.Sprintf("f%02d", f)
		roots = append(roots, root)
		if rng.IntN(8) == 0 {
			e.sessionRoot(root)
			sessions[root] = true
		} else {
			e.create(root)
		}
		ms := []member{{root, rng.IntN(3)}}
		for i := range rng.IntN(4) {
			id := fmt.Sprintf("%s.%d", root, i)
			e.child(id, ms[rng.IntN(len(ms))].id)
			ms = append(ms, member{id, rng.IntN(3)})
		}
		if rng.IntN(2) == 0 { // many settled families
			for i := range ms {
				ms[i].state = 0
			}
		}
		families[root] = ms
	}
	endAll := func(state int) {
		for _, root := range roots {
			ms := families[root]
			for i := len(ms) - 1; i >= 0; i-- { // children first
				if ms[i].state == state {
					e.end(ms[i].id, hitchtype.StatusCompleted)
				}
			}
		}
	}
	endAll(0)
	e.waitPast(e.now())
	cut := e.now()
	e.waitPast(cut)
	endAll(1)

	var want []string
	runs := int64(0)
	for _, root := range roots {
		settled := !sessions[root]
		for _, m := range families[root] {
			settled = settled && m.state == 0
		}
		if settled {
			want = append(want, root)
			runs += int64(len(families[root]))
		}
	}
	var got []string
	gotRuns := int64(0)
	for range 100 {
		res := e.prune(store.RunPruneParams{Before: cut, Limit: 1 + rng.IntN(4)})
		if len(res.Roots) == 0 {
			break
		}
		got = append(got, res.Roots...)
		gotRuns += res.Runs
	}
	slices.Sort(got)
	if !slices.Equal(got, want) || gotRuns != runs {
		t.Fatalf("pruned %v (%d runs), want %v (%d runs)", got, gotRuns, want, runs)
	}
	for _, root := range roots {
		for _, m := range families[root] {
			_, err := e.s.RunGet(e.ctx, m.id)
			if gone := err != nil; gone != slices.Contains(want, root) {
				t.Errorf("%s of %s: run get %v", m.id, root, err)
			}
		}
	}
}

func testPruneKeys(t *testing.T, e *env) {
	ss := face[store.SessionStore](t, e.s, "store.SessionStore")
	if _, _, err := ss.SessionCreate(e.ctx, store.SessionCreateParams{ID: "s", Agent: "agent", Version: 1}); err != nil {
		t.Fatal(err)
	}
	send := func(mid, key string, ttl time.Duration) store.SessionAppendResult {
		t.Helper()
		res, err := ss.SessionAppend(e.ctx, store.SessionAppendParams{SessionID: "s", After: store.AnyPosition,
			Kind: hitchtype.KindMessageAdmitted, IdempotencyKey: key, KeyTTL: ttl,
			Data: msgData(hitchtype.MessageAdmitted{ID: mid, IdempotencyKey: key, Mode: hitchtype.ModeQueue, Text: mid})})
		if err != nil {
			t.Fatalf("send %s: %v", mid, err)
		}
		return res
	}
	// An admission sweeps a few expired keys itself, so the short keys
	// last long enough for all four admissions to come first.
	var first store.SessionAppendResult
	for i := range 3 {
		res := send(fmt.Sprintf("m%d", i), fmt.Sprintf("short%d", i), time.Second)
		if i == 0 {
			first = res
		}
	}
	send("kept", "long", time.Hour)
	e.waitPast(first.Entry.At.Add(2 * time.Second))
	n, err := e.s.SessionKeyPrune(e.ctx, 2)
	if err != nil || n != 2 {
		t.Fatalf("prune 2 keys: %d, %v", n, err)
	}
	if n, err = e.s.SessionKeyPrune(e.ctx, 10); err != nil || n != 1 {
		t.Fatalf("prune the rest: %d, %v, want 1 (the live key stays)", n, err)
	}
	if dup := send("again", "long", time.Hour); !dup.Duplicate {
		t.Error("a key inside its window was pruned")
	}
}

func testPruneBadInput(t *testing.T, e *env) {
	for name, p := range map[string]store.RunPruneParams{
		"no cut":     {},
		"limit -1":   {Before: e.now(), Limit: -1},
		"limit 1001": {Before: e.now(), Limit: store.MaxPruneLimit + 1},
	} {
		if _, err := e.s.RunPrune(e.ctx, p); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for _, n := range []int{0, -1, store.MaxPruneLimit + 1} {
		if _, err := e.s.SessionKeyPrune(e.ctx, n); err == nil {
			t.Errorf("session key prune limit %d: accepted", n)
		}
	}
}
