package startstop

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestStartStop: one loop at a time; Stop waits for it; a stopped service
// starts again; stopping twice, or before a start, does nothing.
func TestStartStop(t *testing.T) {
	var b Base
	if err := b.Stop(t.Context()); err != nil {
		t.Fatalf("stop before start: %v", err)
	}
	var started Signal[int]
	starts := started.Init()
	returned := make(chan int, 2)
	for i := range 2 {
		err := b.Start(t.Context(), func(ctx context.Context) {
			started.Signal(i)
			<-ctx.Done()
			returned <- i
		})
		if err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		if got := <-starts; got != i {
			t.Fatalf("start %d ran loop %d", i, got)
		}
		if err := b.Start(t.Context(), func(context.Context) {}); !errors.Is(err, ErrStarted) {
			t.Fatalf("a second start while running: %v", err)
		}
		if !b.Running() {
			t.Fatal("not running after start")
		}
		if err := b.Stop(t.Context()); err != nil {
			t.Fatalf("stop %d: %v", i, err)
		}
		select {
		case got := <-returned:
			if got != i {
				t.Fatalf("stop %d returned before loop %d", i, got)
			}
		default:
			t.Fatalf("stop %d returned before its loop did", i)
		}
		if err := b.Stop(t.Context()); err != nil || b.Running() {
			t.Fatalf("a second stop: %v, running %v", err, b.Running())
		}
	}
}

// TestStopBounded: a loop that does not return in time leaves Stop with
// ctx's error and the service running, until a later Stop sees it return.
func TestStopBounded(t *testing.T) {
	var b Base
	release := make(chan struct{})
	if err := b.Start(t.Context(), func(ctx context.Context) { <-ctx.Done(); <-release }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := b.Stop(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("bounded stop: %v", err)
	}
	if !b.Running() {
		t.Fatal("a loop still running counts as stopped")
	}
	close(release)
	if err := b.Stop(t.Context()); err != nil || b.Running() {
		t.Fatalf("stop after the loop returned: %v, running %v", err, b.Running())
	}
}

// TestStartCtx: the loop's context ends with the caller's.
func TestStartCtx(t *testing.T) {
	var b Base
	ctx, cancel := context.WithCancel(t.Context())
	ended := make(chan struct{})
	if err := b.Start(ctx, func(ctx context.Context) { <-ctx.Done(); close(ended) }); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-ended
	if err := b.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// TestSignal: an inert signal drops events; a live one keeps up to its
// buffer and never blocks; Wait is bounded by ctx.
func TestSignal(t *testing.T) {
	var s Signal[int]
	s.Signal(1) // inert: nothing to do, nothing blocks
	ch := s.Init()
	for i := range signalBuffer + 10 {
		s.Signal(i)
	}
	if len(ch) != signalBuffer {
		t.Fatalf("buffered %d, want %d", len(ch), signalBuffer)
	}
	if v, err := s.Wait(t.Context()); err != nil || v != 0 {
		t.Fatalf("wait: %d %v", v, err)
	}
	for len(ch) > 0 {
		<-ch
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
	defer cancel()
	if _, err := s.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait on nothing: %v", err)
	}
}

// TestWait: Wait returns once the group is done, and ctx's error while it
// is not.
func TestWait(t *testing.T) {
	var wg sync.WaitGroup
	wg.Add(1)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := Wait(ctx, &wg); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait on a busy group: %v", err)
	}
	go wg.Done()
	if err := Wait(t.Context(), &wg); err != nil {
		t.Fatalf("wait on a group that finishes: %v", err)
	}
}
