package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/store"
)

func (e *env) elect(name, id string, ttl time.Duration) (store.Leadership, bool) {
	e.t.Helper()
	l, ok, err := e.s.LeaderAttemptElect(e.ctx, store.LeaderElectParams{Name: name, LeaderID: id, TTL: ttl})
	if err != nil {
		e.t.Fatalf("elect %s as leader of %s: %v", id, name, err)
	}
	if l.Name != name {
		e.t.Fatalf("elect %s as leader of %s: the answer names %q", id, name, l.Name)
	}
	return l, ok
}

func (e *env) resign(name, id string) {
	e.t.Helper()
	if err := e.s.LeaderResign(e.ctx, store.LeaderResignParams{Name: name, LeaderID: id}); err != nil {
		e.t.Fatalf("%s resigns %s: %v", id, name, err)
	}
}

func testLeader(t *testing.T, open opener) {
	t.Run("OneLeader", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		before := e.now()
		a, ok := e.elect("m", "A", longTTL)
		after := e.now()
		if !ok || a.LeaderID != "A" {
			t.Fatalf("first attempt: elected=%v %+v", ok, a)
		}
		if a.ElectedAt.Before(before.Add(-time.Microsecond)) || a.ElectedAt.After(after.Add(time.Microsecond)) ||
			!sameTime(a.ExpiresAt, a.ElectedAt.Add(longTTL)) {
			t.Fatalf("leadership %+v, want elected within [%v, %v] for %v", a, before, after, longTTL)
		}
		b, ok := e.elect("m", "B", longTTL)
		if ok || b.LeaderID != "A" || !sameTime(b.ExpiresAt, a.ExpiresAt) {
			t.Fatalf("attempt against a live leader: elected=%v %+v, want A's %+v", ok, b, a)
		}
		// Another name is another leadership.
		if o, ok := e.elect("other", "B", longTTL); !ok || o.LeaderID != "B" {
			t.Fatalf("another name: elected=%v %+v", ok, o)
		}
	})

	t.Run("Reelect", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		a, _ := e.elect("m", "A", longTTL)
		if e.clock != nil {
			forward(e.clock, a.ElectedAt.Add(time.Minute))
		}
		again, ok := e.elect("m", "A", longTTL)
		if !ok || again.LeaderID != "A" || !sameTime(again.ElectedAt, a.ElectedAt) || again.ExpiresAt.Before(a.ExpiresAt) {
			t.Fatalf("re-election: elected=%v %+v, want A since %v until at least %v", ok, again, a.ElectedAt, a.ExpiresAt)
		}
		if e.clock != nil && !again.ExpiresAt.After(a.ExpiresAt) {
			t.Fatalf("re-election a minute later did not extend: %v, was %v", again.ExpiresAt, a.ExpiresAt)
		}
	})

	t.Run("RunsOut", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		a, _ := e.elect("m", "A", shortTTL)
		e.waitPast(a.ExpiresAt)
		b, ok := e.elect("m", "B", longTTL)
		if !ok || b.LeaderID != "B" || !b.ElectedAt.After(a.ExpiresAt) {
			t.Fatalf("attempt after the leadership ran out: elected=%v %+v", ok, b)
		}
		if l, ok := e.elect("m", "A", longTTL); ok || l.LeaderID != "B" {
			t.Fatalf("the old leader came back over a live one: elected=%v %+v", ok, l)
		}
		// A leader whose own leadership ran out is elected anew, not
		// continued: its ElectedAt starts again.
		e.resign("m", "B")
		c, _ := e.elect("m", "C", shortTTL)
		e.waitPast(c.ExpiresAt)
		c2, ok := e.elect("m", "C", longTTL)
		if !ok || !c2.ElectedAt.After(c.ExpiresAt) {
			t.Fatalf("re-election after running out: elected=%v %+v, want a new term after %v", ok, c2, c.ExpiresAt)
		}
	})

	t.Run("Resign", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		e.elect("m", "A", longTTL)
		e.resign("m", "B") // not the leader: nothing changes
		if l, ok := e.elect("m", "B", longTTL); ok || l.LeaderID != "A" {
			t.Fatalf("a resignation by a non-leader freed the leadership: elected=%v %+v", ok, l)
		}
		e.resign("m", "A")
		e.resign("m", "A") // idempotent
		if l, ok := e.elect("m", "B", longTTL); !ok || l.LeaderID != "B" {
			t.Fatalf("attempt after the leader resigned: elected=%v %+v", ok, l)
		}
		e.resign("never", "A")
	})

	t.Run("Concurrent", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		const n = 8
		var wg sync.WaitGroup
		won := make(chan string, n)
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				id := fmt.Sprintf("node-%d", i)
				l, ok, err := e.s.LeaderAttemptElect(e.ctx, store.LeaderElectParams{Name: "m", LeaderID: id, TTL: longTTL})
				switch {
				case err != nil:
					errs <- err
				case ok && l.LeaderID == id:
					won <- id
				case ok:
					errs <- fmt.Errorf("%s elected, but the answer names %s", id, l.LeaderID)
				}
			})
		}
		wg.Wait()
		close(won)
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		var winners []string
		for id := range won {
			winners = append(winners, id)
		}
		if len(winners) != 1 {
			t.Fatalf("%d nodes elected at once: %v", len(winners), winners)
		}
	})

	t.Run("BadInput", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		for _, p := range []store.LeaderElectParams{
			{Name: "", LeaderID: "A", TTL: time.Second},
			{Name: "m", LeaderID: "", TTL: time.Second},
			{Name: "m", LeaderID: "A", TTL: 0},
		} {
			if _, _, err := e.s.LeaderAttemptElect(e.ctx, p); err == nil {
				t.Errorf("attempt %+v: no error", p)
			}
		}
		if err := e.s.LeaderResign(e.ctx, store.LeaderResignParams{Name: "m"}); err == nil {
			t.Error("resign without a leader id: no error")
		}
	})
}
