package builtin

import (
	"context"
	"sync"
)

// pathLocks serializes mutations of one resolved path in the order they
// were dispatched: each waiter holds the channel of the one before it, and
// closes its own when done. Different paths never wait on each other.
type pathLocks struct {
	mu    sync.Mutex
	tails map[string]*lockTail
	// queued, when set (by tests), is called with each key once its waiter
	// is in line.
	queued func(key string)
}

type lockTail struct {
	last chan struct{}
	n    int
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// lock resolves the key and joins its queue in one step, so the order of
// entry is the order of service. It returns once the caller is at the head,
// or with ctx's error; the caller must call release.
func (l *pathLocks) lock(ctx context.Context, resolve func() (string, error)) (release func(), err error) {
	l.mu.Lock()
	key, err := resolve()
	if err != nil {
		l.mu.Unlock()
		return nil, err
	}
	if l.tails == nil {
		l.tails = map[string]*lockTail{}
	}
	t := l.tails[key]
	if t == nil {
		t = &lockTail{last: closedChan}
		l.tails[key] = t
	}
	prev, mine := t.last, make(chan struct{})
	t.last = mine
	t.n++
	if l.queued != nil {
		l.queued(key)
	}
	l.mu.Unlock()

	done := func() {
		close(mine)
		l.mu.Lock()
		if t.n--; t.n == 0 {
			delete(l.tails, key)
		}
		l.mu.Unlock()
	}
	select {
	case <-prev:
		return done, nil
	case <-ctx.Done():
		// Keep our place until the one before us is done, so those after
		// us still go in order.
		go func() { <-prev; done() }()
		return nil, ctx.Err()
	}
}
