package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/store"
)

// unreliable fails LeaseRenewMany while renewFails is set, and the first
// claimFails claims of due runs, as a store that is briefly unreachable.
type unreliable struct {
	store.Store
	renewFails atomic.Bool
	renewals   chan bool // each renewal, and whether it failed
	claimFails atomic.Int64
}

var errUnreachable = errors.New("database is unreachable")

func (s *unreliable) LeaseRenewMany(ctx context.Context, p store.LeaseRenewManyParams) ([]store.LeaseRenewal, error) {
	fail := s.renewFails.Load()
	if s.renewals != nil {
		select {
		case s.renewals <- fail:
		default:
		}
	}
	if fail {
		return nil, errUnreachable
	}
	return s.Store.LeaseRenewMany(ctx, p)
}

func (s *unreliable) LeaseClaim(ctx context.Context, p store.LeaseClaimParams) ([]store.Lease, error) {
	if p.RunID == "" && s.claimFails.Add(-1) >= 0 {
		return nil, errUnreachable
	}
	return s.Store.LeaseClaim(ctx, p)
}

// TestRenewalErrorsStopTheRunnerOnceTheLeaseWouldLapse: a renewal that
// fails for a transient reason is retried; the runner goes on while the
// lease may still be live, and stops once it would have lapsed.
func TestRenewalErrorsStopTheRunnerOnceTheLeaseWouldLapse(t *testing.T) {
	ctx := context.Background()
	sq, _ := openClock(t)
	st := &unreliable{Store: sq, renewals: make(chan bool, 64)}
	entered, gate := make(chan struct{}, 1), make(chan struct{})
	defer close(gate)
	m := gated{Model: scripted.New("m", scripted.Script{Turns: []scripted.Turn{{Text: "over"}}}), entered: entered, gate: gate}
	a := testAgent(m)
	const ttl = 200 * time.Millisecond
	e := testEngine(st, "node", a, ttl, ttl/10)
	defer e.Close(ctx)
	if _, err := e.Start(ctx, a, StartParams{ID: "r1", Input: "hi"}); err != nil {
		t.Fatal(err)
	}
	<-entered
	e.mu.Lock()
	r := e.active["r1"]
	e.mu.Unlock()
	// One failed renewal does not stop it.
	st.renewFails.Store(true)
	for !<-st.renewals {
	}
	st.renewFails.Store(false)
	for ok := 0; ok < 3; {
		if !<-st.renewals {
			ok++
		}
	}
	select {
	case <-r.done:
		t.Fatalf("the runner stopped after one failed renewal: %v", r.err)
	default:
	}
	// Failing for longer than the TTL stops it.
	st.renewFails.Store(true)
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the runner went on without a live lease")
	}
	if !errors.Is(r.err, errFenced) || !errors.Is(r.err, errUnreachable) {
		t.Errorf("runner stopped with %v, want a lapsed lease", r.err)
	}
}

// TestSweeperBacksOffThroughStoreErrors: the sweeper survives failed
// claims and drives the run once the store answers; tests wait on its
// signals.
func TestSweeperBacksOffThroughStoreErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sq, _ := openClock(t)
	st := &unreliable{Store: sq}
	st.claimFails.Store(3)
	a := testAgent(scripted.New("m", scripted.Script{Turns: []scripted.Turn{{Text: "over"}}}))
	e := testEngine(st, "node", a, time.Minute, 20*time.Second)
	defer e.Close(ctx)
	if _, err := e.Start(ctx, a, StartParams{ID: "r1", Input: "hi", Detached: true}); err != nil {
		t.Fatal(err)
	}
	var reported atomic.Int64
	s := e.NewSweeper(time.Millisecond, 4*time.Millisecond, func(error) { reported.Add(1) })
	s.testSignals.failed.init()
	s.testSignals.swept.init()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	for range 3 {
		if err, _ := s.testSignals.failed.wait(ctx); !errors.Is(err, errUnreachable) {
			t.Fatalf("failed pass: %v", err)
		}
	}
	for claimed := 0; claimed == 0; {
		var err error
		if claimed, err = s.testSignals.swept.wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	run, err := e.Await(ctx, "r1")
	if err != nil || run.Status != hitchtype.StatusCompleted {
		t.Fatalf("after the errors: %+v %v", run, err)
	}
	if reported.Load() != 3 {
		t.Errorf("%d errors reported, want 3", reported.Load())
	}
	if got := s.backoff(10); got != 4*time.Millisecond {
		t.Errorf("backoff after 10 failures %s, want the bound", got)
	}
}

// TestSweeperWakesOnNotification: a sweeper that would next pass in an hour
// claims a new run as soon as the store says work may be due: the SQLite
// store says so at the commit that created it.
func TestSweeperWakesOnNotification(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, _ := openClock(t)
	a := testAgent(scripted.New("m", scripted.Script{Turns: []scripted.Turn{{Text: "over"}}}))
	e := testEngine(st, "node", a, time.Minute, 20*time.Second)
	defer e.Close(ctx)
	s := e.NewSweeper(time.Hour, time.Hour, nil)
	s.testSignals.swept.init()
	s.testSignals.woken.init()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if n, err := s.testSignals.swept.wait(ctx); err != nil || n != 0 {
		t.Fatalf("first pass: %d %v", n, err)
	}
	if _, err := e.Start(ctx, a, StartParams{ID: "r1", Input: "hi", Detached: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.testSignals.woken.wait(ctx); err != nil {
		t.Fatal("the wake did not cut the wait short")
	}
	if n, err := s.testSignals.swept.wait(ctx); err != nil || n != 1 {
		t.Fatalf("pass after the wake: claimed %d %v, want 1", n, err)
	}
	if run, err := e.Await(ctx, "r1"); err != nil || run.Status != hitchtype.StatusCompleted {
		t.Fatalf("%+v %v", run, err)
	}
}

// claimAcrossCancel is a store whose claim commits and then finds its
// caller gone, as a claim cancelled in flight on a networked database may:
// the rows are leased, the caller is told only that its context ended.
type claimAcrossCancel struct {
	store.Store
	cancel context.CancelFunc
}

func (s claimAcrossCancel) LeaseClaim(ctx context.Context, p store.LeaseClaimParams) ([]store.Lease, error) {
	ls, err := s.Store.LeaseClaim(context.WithoutCancel(ctx), p)
	s.cancel() // the stop arrives while the answer is on its way
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return ls, err
}

// TestAClaimCutShortByAStopLeavesNoLease: a sweep stopped while its claim
// is in flight sees the claim through and gives back what it leased, so a
// graceful stop never leaves a run leased to nobody until its TTL runs out.
func TestAClaimCutShortByAStopLeavesNoLease(t *testing.T) {
	ctx := context.Background()
	sq, _ := openClock(t)
	a := testAgent(scripted.New("m", scripted.Script{Turns: []scripted.Turn{{Text: "over"}}}))
	setup := testEngine(sq, "setup", a, time.Minute, time.Second)
	if _, err := setup.Start(ctx, a, StartParams{ID: "r1", Input: "hi", Detached: true}); err != nil {
		t.Fatal(err)
	}
	if err := setup.Close(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	e := testEngine(claimAcrossCancel{Store: sq, cancel: cancel}, "node", a, time.Minute, time.Second)
	_, _ = e.Work(wctx)
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := sq.RunGet(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if r.LeaseOwner != "" && r.Status != hitchtype.StatusCompleted {
		t.Fatalf("run %s is still leased to %q after a stopped sweep and a graceful close", r.Status, r.LeaseOwner)
	}
}
