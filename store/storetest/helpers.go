package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/internal/testclock"
	"github.com/hitch-dev/hitch/store"
)

// A lease that must run out is short. On a store whose clock the suite
// drives, the suite moves the clock past it; on a real clock it polls the
// store's clock, for at most expiryWait.
const (
	shortTTL   = 3 * time.Millisecond
	longTTL    = time.Hour
	expiryWait = 10 * time.Second
)

// opener returns a fresh store and, when the suite drives its clock, that
// clock (nil for a store on a real clock).
type opener func(t *testing.T) (store.Store, *testclock.Clock)

// testCase is a sub-test of a group, run on an environment of type E.
type testCase[E any] struct {
	name string
	fn   func(*testing.T, E)
}

// runCases runs each case as a parallel sub-test on an environment of its
// own, which mk makes from a fresh env.
func runCases[E any](t *testing.T, open opener, mk func(*testing.T, *env) E, cases []testCase[E]) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, mk(t, newEnv(t, open)))
		})
	}
}

// face is s's optional face F (named name), or t skipped when the driver
// does not implement it.
func face[F any](t *testing.T, s store.Store, name string) F {
	f, ok := s.(F)
	if !ok {
		t.Skip("the driver does not implement " + name)
	}
	return f
}

// plainEnv is runCases's mk for cases on an env.
func plainEnv(_ *testing.T, e *env) *env { return e }

// clockStart is where every driven clock starts: a fixed, whole second.
var clockStart = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// forward moves a driven clock to t; it never moves it back. Only the
// test's own goroutine moves its clock, so reading and setting it apart
// cannot lose a move.
func forward(c *testclock.Clock, t time.Time) {
	if t.After(c.Now()) {
		c.Set(t)
	}
}

// env is one test's store and context.
type env struct {
	t     *testing.T
	s     store.Store
	clock *testclock.Clock // nil on a real clock
	ctx   context.Context
}

func newEnv(t *testing.T, open opener) *env {
	t.Helper()
	s, clock := open(t)
	if s == nil {
		t.Fatal("open returned a nil store")
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return &env{t: t, s: s, clock: clock, ctx: t.Context()}
}

// data returns a small JSON object that identifies (tag, i).
func data(tag string, i int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"tag":%q,"i":%d,"text":"some text"}`, tag, i))
}

func entries(tag string, n int) []store.EntryInput {
	es := make([]store.EntryInput, n)
	for i := range es {
		es[i] = store.EntryInput{Kind: "test." + tag, Data: data(tag, i)}
	}
	return es
}

func (e *env) now() time.Time {
	e.t.Helper()
	now, err := e.s.Now(e.ctx)
	if err != nil {
		e.t.Fatalf("now: %v", err)
	}
	return now
}

// create makes a queued run with one entry.
func (e *env) create(id string) store.Run {
	e.t.Helper()
	return e.createWith(store.RunCreateParams{ID: id, Agent: "agent", Version: 1, InputHash: "h-" + id,
		Entries: entries(id, 1)})
}

// createRoot makes the queued run "root" with one entry and the budget
// limits.
func (e *env) createRoot(limits store.Budget) store.Run {
	e.t.Helper()
	return e.createWith(store.RunCreateParams{ID: "root", Agent: "a", Entries: entries("root", 1), Budget: &limits})
}

func (e *env) createWith(p store.RunCreateParams) store.Run {
	e.t.Helper()
	run, created, err := e.s.RunCreate(e.ctx, p)
	if err != nil {
		e.t.Fatalf("run create %q: %v", p.ID, err)
	}
	if !created {
		e.t.Fatalf("run create %q: created=false for a new id", p.ID)
	}
	return run
}

// requestCancel asks run id to cancel.
func (e *env) requestCancel(id string) {
	e.t.Helper()
	if _, err := e.s.RunRequestCancel(e.ctx, store.RunRequestCancelParams{ID: id}); err != nil {
		e.t.Fatalf("request cancel of %s: %v", id, err)
	}
}

func (e *env) get(id string) store.Run {
	e.t.Helper()
	run, err := e.s.RunGet(e.ctx, id)
	if err != nil {
		e.t.Fatalf("run get %q: %v", id, err)
	}
	return run
}

// createClaimed makes a queued run with one entry and claims it.
func (e *env) createClaimed(id, owner string, ttl time.Duration) store.Lease {
	e.t.Helper()
	e.create(id)
	return e.claim(id, owner, ttl)
}

func (e *env) claim(id, owner string, ttl time.Duration) store.Lease {
	e.t.Helper()
	ls, err := e.s.LeaseClaim(e.ctx, store.LeaseClaimParams{Owner: owner, TTL: ttl, RunID: id})
	if err != nil {
		e.t.Fatalf("lease claim %q: %v", id, err)
	}
	if len(ls) != 1 || ls[0].Run.ID != id {
		e.t.Fatalf("lease claim %q: got %d leases %v, want exactly that run", id, len(ls), leaseIDs(ls))
	}
	return ls[0]
}

func (e *env) append(l store.Lease, p store.JournalAppendParams) store.Appended {
	e.t.Helper()
	p.RunID, p.Token = l.Run.ID, l.Token
	run, err := e.s.JournalAppend(e.ctx, p)
	if err != nil {
		e.t.Fatalf("journal append %q: %v", l.Run.ID, err)
	}
	return run
}

func (e *env) read(id string, after int64, limit int) []store.Entry {
	e.t.Helper()
	es, err := e.s.JournalRead(e.ctx, store.JournalReadParams{RunID: id, After: after, Limit: limit})
	if err != nil {
		e.t.Fatalf("journal read %q: %v", id, err)
	}
	return es
}

// waitPast brings the store clock past t: it moves a driven clock there, and
// polls a real one.
func (e *env) waitPast(t time.Time) {
	e.t.Helper()
	if e.clock != nil {
		forward(e.clock, t.Add(time.Microsecond))
		if !e.now().After(t) {
			e.t.Fatalf("store clock reads %v after it was moved past %v: the store does not use the clock it was given", e.now(), t)
		}
		return
	}
	deadline := time.Now().Add(expiryWait)
	for {
		if e.now().After(t) {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("store clock did not pass %v within %v", t, expiryWait)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// expired returns a run that is running under a lease that has run out.
func (e *env) expired(id, owner string) store.Lease {
	e.t.Helper()
	e.create(id)
	l := e.claim(id, owner, shortTTL)
	e.waitPast(l.ExpiresAt)
	return l
}

func leaseIDs(ls []store.Lease) []string {
	ids := make([]string, len(ls))
	for i, l := range ls {
		ids[i] = l.Run.ID
	}
	return ids
}

func runIDs(rs []store.Run) []string {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	return ids
}

// sameTime compares store times to the microsecond, the precision every
// driver keeps.
func sameTime(a, b time.Time) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero() == b.IsZero()
	}
	return a.Sub(b).Abs() < time.Microsecond
}

// sameJSON compares JSON by value, since a driver may store it normalised.
func sameJSON(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

// checkEntries verifies that es are at consecutive positions from first and
// carry want's kinds and data, byte for byte: a runner's replay reads what
// it wrote, so a store keeps entry data as given, not normalised.
func checkEntries(t *testing.T, es []store.Entry, runID string, first int64, want []store.EntryInput) {
	t.Helper()
	if len(es) != len(want) {
		t.Fatalf("got %d entries, want %d", len(es), len(want))
	}
	for i, got := range es {
		if got.RunID != runID || got.Pos != first+int64(i) || got.Kind != want[i].Kind || !bytes.Equal(got.Data, want[i].Data) {
			t.Fatalf("entry %d = {%s %d %s %s}, want {%s %d %s %s}", i, got.RunID, got.Pos, got.Kind, got.Data,
				runID, first+int64(i), want[i].Kind, want[i].Data)
		}
		if got.At.IsZero() {
			t.Fatalf("entry %d has no time", i)
		}
	}
}

// unchanged checks that a failed call wrote nothing to the run.
func (e *env) unchanged(before store.Run) {
	e.t.Helper()
	after := e.get(before.ID)
	if after.Position != before.Position || after.Status != before.Status || after.LeaseToken != before.LeaseToken ||
		after.LeaseOwner != before.LeaseOwner || !sameTime(after.UpdatedAt, before.UpdatedAt) ||
		!sameTime(after.LeaseExpires, before.LeaseExpires) || !sameTime(after.WakeAt, before.WakeAt) {
		e.t.Fatalf("run changed by a failed call:\nbefore %+v\nafter  %+v", before, after)
	}
	if n := len(e.read(before.ID, 0, 0)); int64(n) != before.Position {
		e.t.Fatalf("journal has %d entries, want %d", n, before.Position)
	}
}
