package engine

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/model/scripted"
)

// TestElectorOneLeaderOnAFakeClock: two nodes share a store whose clock,
// like each node's own, is a fake the test moves. One leads; the leader
// stops trusting its leadership a margin before the store would let it
// go; a leader that stops attempting is replaced once its leadership runs
// out, never sooner.
func TestElectorOneLeaderOnAFakeClock(t *testing.T) {
	ctx := context.Background()
	st, clock := openClock(t)
	a := testAgent(scripted.New("m", scripted.Script{Turns: []scripted.Turn{{Text: "over"}}}))
	const ttl, margin = 30 * time.Second, 6 * time.Second
	nodes := map[string]*Elector{}
	for _, owner := range []string{"A", "B"} {
		e := testEngine(st, owner, a, time.Minute, 20*time.Second)
		defer e.Close(ctx)
		l := e.NewElector("maintenance", ttl, margin, nil, nil)
		l.now = clock.Now
		nodes[owner] = l
	}
	A, B := nodes["A"], nodes["B"]
	attempt := func(l *Elector, want bool) {
		t.Helper()
		ok, err := l.attempt(ctx)
		if err != nil || ok != want {
			t.Fatalf("%s attempts: elected=%v %v, want %v", l.e.cfg.Owner, ok, err, want)
		}
	}
	leaders := func(wantA, wantB bool) {
		t.Helper()
		if A.IsLeader() != wantA || B.IsLeader() != wantB {
			t.Fatalf("A leads %v, B leads %v; want %v, %v", A.IsLeader(), B.IsLeader(), wantA, wantB)
		}
	}
	leaders(false, false)
	attempt(A, true)
	attempt(B, false)
	leaders(true, false)

	// Re-elected every third of the TTL, A keeps leading.
	for range 5 {
		clock.Add(ttl / 3)
		attempt(A, true)
		attempt(B, false)
		leaders(true, false)
	}

	// A stops attempting. Inside the margin it no longer trusts its
	// leadership, while the store still refuses B.
	clock.Add(ttl - margin)
	leaders(false, false)
	attempt(B, false)
	clock.Add(margin - time.Second)
	attempt(B, false)
	leaders(false, false)
	// Once the leadership has run out, B takes it, and A cannot take it back.
	clock.Add(time.Second)
	attempt(B, true)
	attempt(A, false)
	leaders(false, true)
}

// TestElectorHandsOverOnStop: the elector service attempts on its own; the
// second node follows until the leader stops, which resigns, and then
// leads at its next attempt, long before the TTL would have freed it.
func TestElectorHandsOverOnStop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, _ := openClock(t) // the store clock stands still: only a resignation frees the leadership
	a := testAgent(scripted.New("m", scripted.Script{Turns: []scripted.Turn{{Text: "over"}}}))
	const ttl = 300 * time.Millisecond
	var ls []*Elector
	seen := map[string]chan string{}
	for _, owner := range []string{"A", "B"} {
		e := testEngine(st, owner, a, time.Minute, 20*time.Second)
		defer e.Close(ctx)
		ch := make(chan string, 16)
		seen[owner] = ch
		l := e.NewElector("maintenance", ttl, ttl/5, func(err error) { t.Errorf("%s: %v", owner, err) }, func(leader string) { ch <- leader })
		l.testSignals.attempted.init()
		ls = append(ls, l)
	}
	A, B := ls[0], ls[1]
	if err := A.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := A.testSignals.attempted.wait(ctx); err != nil || !ok {
		t.Fatalf("A's first attempt: %v %v", ok, err)
	}
	if err := B.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer B.Stop()
	for range 3 {
		if ok, err := B.testSignals.attempted.wait(ctx); err != nil || ok {
			t.Fatalf("B elected while A leads: %v %v", ok, err)
		}
	}
	A.Stop()
	if A.IsLeader() {
		t.Fatal("A still trusts its leadership after stopping")
	}
	for {
		ok, err := B.testSignals.attempted.wait(ctx)
		if err != nil {
			t.Fatal("B never took over after A resigned")
		}
		if ok {
			break
		}
	}
	if !B.IsLeader() && A.IsLeader() {
		t.Fatal("after the hand-over A leads and B does not")
	}
	// Each saw who led, once per change: A itself and then nobody once
	// stopped; B first A, then itself.
	B.Stop()
	for owner, want := range map[string][]string{"A": {"A", ""}, "B": {"A", "B", ""}} {
		close(seen[owner])
		var got []string
		for l := range seen[owner] {
			got = append(got, l)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s saw leaders %q, want %q", owner, got, want)
		}
	}
}
