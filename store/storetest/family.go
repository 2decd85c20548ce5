package storetest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// child creates a queued child of parent.
func (e *env) child(id, parent string) store.Run {
	e.t.Helper()
	p := e.get(parent)
	return e.createWith(store.RunCreateParams{ID: id, RootID: p.RootID, ParentID: parent, Depth: p.Depth + 1,
		Agent: "sub", Entries: entries(id, 1)})
}

// wait claims id and leaves it waiting until wake (zero: until claimed by id).
func (e *env) wait(id string, wake time.Time) store.Lease {
	e.t.Helper()
	l := e.claim(id, "waiter", longTTL)
	run := e.get(id)
	e.append(l, store.JournalAppendParams{After: run.Position, Entries: entries("wait", 1), Status: hitchtype.StatusWaiting,
		WakeAt: wake})
	return l
}

// end claims id and ends it with st.
func (e *env) end(id string, st hitchtype.Status) store.Appended {
	e.t.Helper()
	l := e.claim(id, "ender", longTTL)
	return e.append(l, store.JournalAppendParams{After: l.Run.Position, Entries: entries("end", 1), Status: st,
		Outcome: json.RawMessage(`{"why":"test"}`)})
}

// dueNow checks that a run's WakeAt was set by a write made between from and
// to on the store clock.
func (e *env) dueNow(id string, from, to time.Time) {
	e.t.Helper()
	r := e.get(id)
	if r.WakeAt.IsZero() || r.WakeAt.Before(from.Add(-time.Microsecond)) || r.WakeAt.After(to.Add(time.Microsecond)) {
		e.t.Fatalf("%s: wake at %v, want the time of the end, within [%v, %v]", id, r.WakeAt, from, to)
	}
}

func testFamily(t *testing.T, open opener) {
	t.Run("ParkingACancelledRunMakesItDue", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		l := e.createClaimed("r", "worker", longTTL)
		e.requestCancel("r")
		from := e.now()
		// The runner parks it as if it had not seen the request yet.
		e.append(l, store.JournalAppendParams{After: l.Run.Position, Entries: entries("park", 1), Status: hitchtype.StatusWaiting,
			WakeAt: from.Add(time.Hour)})
		e.dueNow("r", from, e.now())
	})
	t.Run("EndCancelsChildren", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		e.create("root")
		for _, id := range []string{"queued", "running", "waiting", "sleeping", "done", "cancelled"} {
			e.child(id, "root")
		}
		e.claim("running", "worker", longTTL)
		e.wait("waiting", time.Time{})
		e.wait("sleeping", e.now().Add(time.Hour))
		e.end("done", hitchtype.StatusCompleted)
		e.requestCancel("cancelled")
		e.child("grandchild", "running")
		doneBefore, grandBefore := e.get("done"), e.get("grandchild")

		from := e.now()
		e.end("root", hitchtype.StatusCompleted) // any terminal status; the engine's choice
		to := e.now()

		for _, id := range []string{"queued", "running", "waiting", "sleeping", "cancelled"} {
			if r := e.get(id); !r.CancelRequested || r.Status.Terminal() {
				t.Fatalf("live child %s after the parent's end: %+v, want a cancel request", id, r)
			}
		}
		e.dueNow("waiting", from, to)
		e.dueNow("sleeping", from, to)
		if r := e.get("queued"); !r.WakeAt.IsZero() {
			t.Fatalf("queued child got a wake time %v", r.WakeAt)
		}
		e.unchanged(doneBefore)
		if e.get("done").CancelRequested {
			t.Fatal("an ended child got a cancel request")
		}
		// Only direct children: the grandchild hears of it when its parent ends.
		e.unchanged(grandBefore)
		if e.get("grandchild").CancelRequested {
			t.Fatal("grandchild got a cancel request before its parent ended")
		}

		// Every live child is due now but the one still leased.
		ls, err := e.s.LeaseClaim(e.ctx, store.LeaseClaimParams{Owner: "sweeper", TTL: longTTL, Limit: 10})
		if err != nil {
			t.Fatalf("claim: %v", err)
		}
		got := leaseIDs(ls)
		slices.Sort(got)
		if want := []string{"cancelled", "grandchild", "queued", "sleeping", "waiting"}; !slices.Equal(got, want) {
			t.Fatalf("claimed %v, want %v", got, want)
		}
		for _, l := range ls {
			if l.Run.ID != "grandchild" && !l.Run.CancelRequested {
				t.Fatalf("claimed %s without its cancel request", l.Run.ID)
			}
		}

		// The grandchild chain: the child's own end carries it on.
		g := ls[slices.IndexFunc(ls, func(l store.Lease) bool { return l.Run.ID == "grandchild" })]
		e.append(g, store.JournalAppendParams{After: g.Run.Position, Entries: entries("w", 1), Status: hitchtype.StatusWaiting})
		l, err := e.s.LeaseRenew(e.ctx, store.LeaseRenewParams{RunID: "running", Owner: "worker", Token: 1, TTL: longTTL})
		if err != nil || !l.CancelRequested {
			t.Fatalf("renew of the running child: %v, cancel requested %v", err, l.CancelRequested)
		}
		from = e.now()
		run, err := e.s.JournalAppend(e.ctx, store.JournalAppendParams{RunID: "running", Token: 1, After: 1,
			Entries: entries("end", 1), Status: hitchtype.StatusCancelled})
		if err != nil || run.Status != hitchtype.StatusCancelled {
			t.Fatalf("end of the running child: %v %+v", err, run)
		}
		to = e.now()
		if r := e.get("grandchild"); !r.CancelRequested || r.Status != hitchtype.StatusWaiting {
			t.Fatalf("grandchild after its parent's end: %+v", r)
		}
		e.dueNow("grandchild", from, to)
		if r := e.get("root"); r.Status != hitchtype.StatusCompleted || !r.WakeAt.IsZero() {
			t.Fatalf("an ended root changed when its child ended: %+v", r)
		}
	})

	t.Run("ChildEndWakesParent", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		e.create("root")
		e.child("kid", "root")
		e.child("grandkid", "kid")
		e.wait("root", time.Time{})
		e.wait("kid", e.now().Add(time.Hour))

		from := e.now()
		e.end("grandkid", hitchtype.StatusFailed)
		to := e.now()
		e.dueNow("kid", from, to)
		if r := e.get("root"); !r.WakeAt.IsZero() {
			t.Fatalf("grandparent woken by a grandchild: %+v", r)
		}
		ls, err := e.s.LeaseClaim(e.ctx, store.LeaseClaimParams{Owner: "w", TTL: longTTL, Limit: 10})
		if err != nil || len(ls) != 1 || ls[0].Run.ID != "kid" {
			t.Fatalf("claim after the grandchild's end: %v %v, want kid", err, leaseIDs(ls))
		}
		if ls[0].Run.CancelRequested {
			t.Fatal("a child's end asked its parent to cancel")
		}
		kid := ls[0]
		from = e.now()
		e.append(kid, store.JournalAppendParams{After: kid.Run.Position, Entries: entries("end", 1),
			Status: hitchtype.StatusCompleted, Outcome: json.RawMessage(`"ok"`)})
		to = e.now()
		e.dueNow("root", from, to)
		ls, err = e.s.LeaseClaim(e.ctx, store.LeaseClaimParams{Owner: "w", TTL: longTTL, Limit: 10})
		if err != nil || len(ls) != 1 || ls[0].Run.ID != "root" {
			t.Fatalf("claim after the child's end: %v %v, want root", err, leaseIDs(ls))
		}
	})

	t.Run("ParentKeepsEarlierWake", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		e.create("root")
		e.child("kid", "root")
		early := e.now().Add(-time.Second)
		e.wait("root", early)
		e.end("kid", hitchtype.StatusCompleted)
		if r := e.get("root"); !sameTime(r.WakeAt, early) {
			t.Fatalf("parent's earlier wake time %v became %v", early, r.WakeAt)
		}
	})

	t.Run("RunningParentUntouched", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		e.create("root")
		e.child("kid", "root")
		e.claim("root", "me", longTTL)
		before := e.get("root")
		e.end("kid", hitchtype.StatusCompleted)
		e.unchanged(before)
		if r := e.get("root"); !r.WakeAt.IsZero() || r.CancelRequested {
			t.Fatalf("running parent changed by its child's end: %+v", r)
		}
	})
}
