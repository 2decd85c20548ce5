package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hitch-dev/hitch/store"
)

// Elector is a node's background service that holds one leadership of the
// store (store.LeaderAttemptElect) for periodic work that one node at a
// time should do. It attempts at once and then every third of the TTL: a
// leader is re-elected, a follower takes over once the leadership is free
// or has run out. The node trusts its leadership until the TTL less a
// margin has passed since it sent the attempt that won it, counted on its
// own clock: the store's leadership cannot end sooner, so two nodes never
// both believe they lead, whatever the store's clock says. A store error
// does not end it: trust lapses on its own, and the next attempt comes at
// the usual time. Stop resigns, so another node is elected at its next
// attempt.
type Elector struct {
	e       *Engine
	name    string
	ttl     time.Duration
	every   time.Duration
	margin  time.Duration
	onError func(error)
	// onChange, if set, sees who leads whenever that changes as this
	// node sees it; it runs on the elector's goroutine.
	onChange func(leader string)
	// now is the node's own clock; tests replace it.
	now func() time.Time

	testSignals electorTestSignals

	mu     sync.Mutex
	until  time.Time // trusted until this reading of now
	seen   string    // the leader last seen; "" none or unknown
	told   bool      // onChange has been told seen at least once
	cancel context.CancelFunc
	done   chan struct{}
}

type electorTestSignals struct {
	attempted testSignal[bool] // an attempt ended: elected or not
}

// NewElector returns a stopped elector for the leadership name. onError, if
// set, sees each failed attempt or resignation. onChange, if set, sees the
// leader's id after the first attempt and again whenever it changes: this
// node's own id only while it trusts its leadership, another's while the
// store names another live leader, "" when none is known (an attempt
// failed, or the elector stopped).
func (e *Engine) NewElector(name string, ttl, margin time.Duration, onError func(error), onChange func(leader string)) *Elector {
	return &Elector{e: e, name: name, ttl: ttl, every: ttl / 3, margin: margin, onError: onError, onChange: onChange, now: time.Now}
}

// observe tells onChange the leader seen, if that changed.
func (l *Elector) observe(leader string) {
	l.mu.Lock()
	changed := !l.told || leader != l.seen
	l.seen, l.told = leader, true
	l.mu.Unlock()
	if changed && l.onChange != nil {
		l.onChange(leader)
	}
}

// IsLeader reports whether this node leads now: its last attempt won the
// leadership and the trust that gave has not lapsed.
func (l *Elector) IsLeader() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.now().Before(l.until)
}

// attempt tries to be elected (or re-elected) once.
func (l *Elector) attempt(ctx context.Context) (bool, error) {
	ok, _, err := l.attemptSeen(ctx)
	return ok, err
}

// attemptSeen is attempt, also returning the leader the store named.
func (l *Elector) attemptSeen(ctx context.Context) (bool, string, error) {
	sent := l.now()
	got, ok, err := l.e.cfg.Store.LeaderAttemptElect(ctx, store.LeaderElectParams{Name: l.name, LeaderID: l.e.cfg.Owner, TTL: l.ttl})
	if err != nil {
		return false, "", err // trust, if any, lapses on its own
	}
	l.mu.Lock()
	if ok {
		l.until = sent.Add(l.ttl - l.margin)
	} else {
		l.until = time.Time{}
	}
	l.mu.Unlock()
	return ok, got.LeaderID, nil
}

// errElecting: Start was called on a running elector.
var errElecting = errors.New("elector is already running")

// Start starts the elector's goroutine; its first attempt is at once.
func (l *Elector) Start(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done != nil {
		return errElecting
	}
	ctx, l.cancel = context.WithCancel(ctx)
	l.done = make(chan struct{})
	go l.loop(ctx, l.done)
	return nil
}

// Stop stops the elector, stops trusting the leadership, and resigns it
// (bounded by the TTL), so another node takes over at its next attempt.
// Stopping a stopped elector does nothing.
func (l *Elector) Stop() {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.cancel, l.done = nil, nil
	l.mu.Unlock()
	if done == nil {
		return
	}
	cancel()
	<-done
	l.mu.Lock()
	l.until = time.Time{}
	told := l.told
	l.mu.Unlock()
	if told {
		l.observe("") // a stopped elector knows no leader
	}
	l.mu.Lock()
	l.told = false // a restart tells its first attempt again
	l.mu.Unlock()
	ctx, stop := context.WithTimeout(context.Background(), l.ttl)
	defer stop()
	err := l.e.cfg.Store.LeaderResign(ctx, store.LeaderResignParams{Name: l.name, LeaderID: l.e.cfg.Owner})
	if err != nil && l.onError != nil {
		l.onError(err)
	}
}

func (l *Elector) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	for {
		// An answer later than the trust it would give is worth nothing.
		actx, cancel := context.WithTimeout(ctx, l.ttl-l.margin)
		ok, leader, err := l.attemptSeen(actx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil && l.onError != nil {
			l.onError(err)
		}
		if leader == l.e.cfg.Owner && !l.IsLeader() {
			leader = "" // won, but the answer came too late to trust
		}
		l.observe(leader)
		l.testSignals.attempted.signal(ok)
		t := time.NewTimer(l.every)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
