// Package startstop gives hitch's background services one way to start and
// stop, and one way for tests to wait on what a service did instead of
// sleeping.
//
// A service embeds Base and calls Base.Start with its loop; the loop runs
// on its own goroutine with a context that ends when the caller's does or
// when Stop is called, and Stop returns once the loop has.
package startstop

import (
	"context"
	"errors"
	"sync"
)

// ErrStarted: Start was called on a service that is running.
var ErrStarted = errors.New("service is already running")

// Base is the start and stop bookkeeping of a service: one loop at a time.
// Its zero value is stopped.
type Base struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Start runs loop on its own goroutine, with a context that ends when ctx
// does or Stop is called. It returns ErrStarted while an earlier loop runs.
func (b *Base) Start(ctx context.Context, loop func(ctx context.Context)) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done != nil {
		return ErrStarted
	}
	ctx, b.cancel = context.WithCancel(ctx)
	done := make(chan struct{})
	b.done = done
	go func() {
		defer close(done)
		loop(ctx)
	}()
	return nil
}

// Stop ends the loop's context and waits for the loop to return, bounded by
// ctx: when ctx ends first it returns ctx's error and the service counts as
// running until a later Stop sees the loop return. Stopping a stopped
// service does nothing.
func (b *Base) Stop(ctx context.Context) error {
	b.mu.Lock()
	cancel, done := b.cancel, b.done
	b.mu.Unlock()
	if done == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	b.mu.Lock()
	if b.done == done {
		b.cancel, b.done = nil, nil
	}
	b.mu.Unlock()
	return nil
}

// Wait waits for wg, bounded by ctx: it returns ctx's error when ctx ends
// first, and leaves a goroutine waiting on wg until wg is done.
func Wait(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Running reports whether a loop runs.
func (b *Base) Running() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.done != nil
}

// Signal lets a test wait for an event of a service. It is inert until
// Init is called (before the service starts), so production code pays one
// nil check per event.
type Signal[T any] struct{ ch chan T }

// signalBuffer is how many events a Signal holds for a test that reads
// them late; past it, events are dropped rather than block the service.
const signalBuffer = 64

// Init makes the signal live and returns the channel its events arrive on.
func (s *Signal[T]) Init() <-chan T {
	s.ch = make(chan T, signalBuffer)
	return s.ch
}

// Signal records an event, never blocking.
func (s *Signal[T]) Signal(v T) {
	if s.ch == nil {
		return
	}
	select {
	case s.ch <- v:
	default:
	}
}

// Wait returns the next event, or ctx's error when ctx ends first.
func (s *Signal[T]) Wait(ctx context.Context) (T, error) {
	select {
	case v := <-s.ch:
		return v, nil
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}
