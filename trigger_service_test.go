package hitch_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/internal/hitchtest"
	"github.com/hitch-dev/hitch/internal/testclock"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/triggers"
)

type pass struct {
	n   int
	err error
}

// The dispatcher passes at once when this runtime creates a binding,
// dispatches it, survives store errors (reporting them), and stops with
// its context.
func TestRunTriggersService(t *testing.T) {
	t.Parallel()
	c := testclock.New(t0)
	st := hitchtest.OpenStore(t, filepath.Join(t.TempDir(), "hitch.db"), sqlite.WithClock(c.Now))
	events := make(chan error, 64)
	rt := hitchtest.Open(t, hitch.Config{Store: st, Agents: []*hitch.Agent{triggerAgent(t)},
		Triggers: triggers.Config{Poll: time.Minute}, // only a wake moves it on at once
		OnEvent: func(ev hitch.Event) {
			if ev.Err != nil {
				select {
				case events <- ev.Err:
				default:
				}
			}
		}})
	passes := hitch.TriggerPasses(rt)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- rt.RunTriggers(ctx) }()
	next := func() pass {
		t.Helper()
		select {
		case p := <-passes:
			return pass{p.N, p.Err}
		case <-time.After(10 * time.Second):
			t.Fatal("no pass within 10s")
		}
		return pass{}
	}
	if p := next(); p.n != 0 || p.err != nil {
		t.Fatalf("first pass: %+v", p)
	}
	if _, _, err := rt.Triggers().Create(t.Context(), triggers.Spec{ID: "now", At: t0, Agent: "tick"}, triggers.Options{}); err != nil {
		t.Fatal(err)
	}
	if p := next(); p.n != 1 || p.err != nil {
		t.Fatalf("the pass after a create: %+v", p)
	}
	if _, err := st.RunGet(t.Context(), triggers.OccurrenceID("now", t0)); err != nil {
		t.Fatalf("the binding's run: %v", err)
	}
	// A wake from another binding's change passes at once too.
	if _, err := rt.Triggers().Pause(t.Context(), "now"); err != nil {
		t.Fatal(err)
	}
	if p := next(); p.n != 0 || p.err != nil {
		t.Fatalf("the pass after a pause: %+v", p)
	}
	// A store that fails does not stop the dispatcher; it says so. (The
	// wake is sent before the store is closed, so the pass meets it closed
	// or finds it so after its wait.)
	hitch.PokeTriggers(rt)
	st.Close()
	p := next()
	for ; p.err == nil; p = next() {
		hitch.PokeTriggers(rt)
	}
	if !errors.Is(p.err, sqlite.ErrClosed) {
		t.Fatalf("a pass on a closed store: %v", p.err)
	}
	select {
	case err := <-events:
		if !strings.Contains(err.Error(), "triggers:") {
			t.Fatalf("event: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the store error was not reported")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("RunTriggers returned %v", err)
	}
}
