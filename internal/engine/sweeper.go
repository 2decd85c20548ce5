package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hitch-dev/hitch/store"
)

// Sweeper is a node's background service that drives due runs: on every
// pass it claims what is due — queued runs, runs whose lease expired or was
// given back, waiting runs whose wake came — up to the free runner slots.
// A pass claims at most the engine's ClaimBatch, so that the nodes of a
// store share a backlog; after a full batch it passes again after the
// engine's ClaimCooldown. It
// passes every interval, and at once when the store, being a
// store.Notifier, says work may be due (a run created, a lease released, a
// parent woken, a cancel requested), or when a runner frees a slot while
// a run waits for one (a pass that filled them all, or a start on a full
// node). A notification lost on the way therefore
// delays work by one interval at most. A store error does not end it: it
// waits, doubling from the interval up to a bound, without heeding wakes,
// and tries again. It stops with Stop, when its context ends, or when the
// engine closes.
type Sweeper struct {
	e          *Engine
	every      time.Duration
	maxBackoff time.Duration
	onError    func(error)

	// testSignals let tests wait on passes instead of sleeping.
	testSignals sweeperTestSignals

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

type sweeperTestSignals struct {
	swept  testSignal[int]      // a pass claimed this many runs
	failed testSignal[error]    // a pass failed; the sweeper backs off
	woken  testSignal[struct{}] // the store's wake cut a wait short
}

// NewSweeper returns a stopped sweeper that claims every interval and, after
// consecutive failures, waits up to maxBackoff. onError, if set, sees each
// failure (on the sweeper's goroutine).
func (e *Engine) NewSweeper(every, maxBackoff time.Duration, onError func(error)) *Sweeper {
	return &Sweeper{e: e, every: every, maxBackoff: max(maxBackoff, every), onError: onError}
}

// errSweeping: Start was called on a running sweeper.
var errSweeping = errors.New("sweeper is already running")

// Start starts the sweeper's goroutine; its first pass is at once.
func (s *Sweeper) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done != nil {
		return errSweeping
	}
	ctx, s.cancel = context.WithCancel(ctx)
	s.done = make(chan struct{})
	go s.loop(ctx, s.done)
	return nil
}

// Stop stops the sweeper and waits for its pass in progress to return
// (runs it claimed go on). Stopping a stopped sweeper does nothing.
func (s *Sweeper) Stop() {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.cancel, s.done = nil, nil
	s.mu.Unlock()
	if done == nil {
		return
	}
	cancel()
	<-done
}

func (s *Sweeper) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	var notified <-chan struct{}
	if n, ok := s.e.cfg.Store.(store.Notifier); ok {
		notified = n.Wake()
	}
	failures := 0
	for {
		batch := min(s.e.slots.free(), max(s.e.cfg.ClaimBatch, 1))
		n, err := s.e.Work(ctx)
		wait, wake, kick := s.every, notified, (<-chan struct{})(s.e.kick)
		switch {
		case n > 0 && n >= batch && s.e.slots.free() > 0:
			// A full batch: more may be due. Pass again soon, not at
			// once, so the other nodes (woken by the same notification)
			// claim their share meanwhile.
			wait = min(s.e.cfg.ClaimCooldown, s.every)
		case n >= batch:
			// Every slot is taken, before or by this pass: more may be
			// due than there is room for, so pass when one frees.
			s.e.starved.Store(true)
		}
		switch {
		case ctx.Err() != nil || s.e.isClosing():
			return
		case err != nil:
			failures++
			wait, wake, kick = s.backoff(failures), nil, nil
			if s.onError != nil {
				s.onError(err)
			}
			s.testSignals.failed.signal(err)
		default:
			failures = 0
			s.testSignals.swept.signal(n)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.e.closed:
			t.Stop()
			return
		case <-t.C:
		case <-wake:
			t.Stop()
			s.testSignals.woken.signal(struct{}{})
		case <-kick:
			t.Stop()
		}
	}
}

// backoff is the wait after n consecutive failures: the interval doubled
// n times, at most maxBackoff.
func (s *Sweeper) backoff(n int) time.Duration {
	d := s.every
	for i := 0; i < n && d < s.maxBackoff; i++ {
		d *= 2
	}
	return min(d, s.maxBackoff)
}

// testSignal lets a test wait for an event of a service. It is inert until
// init is called, so production code pays one nil check.
type testSignal[T any] struct{ ch chan T }

func (ts *testSignal[T]) init() { ts.ch = make(chan T, 64) }

func (ts *testSignal[T]) signal(v T) {
	if ts.ch == nil {
		return
	}
	select {
	case ts.ch <- v:
	default: // nobody is listening closely; drop it rather than block
	}
}

// wait returns the next value, or fails when ctx ends first.
func (ts *testSignal[T]) wait(ctx context.Context) (T, error) {
	select {
	case v := <-ts.ch:
		return v, nil
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}
