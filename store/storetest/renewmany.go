package storetest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// testLeaseRenewMany checks the renewal of a node's leases in one call,
// and the cancel requests read for many runs at once.
func testLeaseRenewMany(t *testing.T, open opener) {
	t.Run("Mixed", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		e.create("held")
		held := e.claim("held", "me", time.Minute)
		e.create("cancelled")
		cancelled := e.claim("cancelled", "me", time.Minute)
		if _, err := e.s.RunRequestCancel(e.ctx, store.RunRequestCancelParams{ID: "cancelled"}); err != nil {
			t.Fatal(err)
		}
		lost := e.expired("lost", "me")
		taken := e.claim("lost", "other", longTTL)
		e.create("ended")
		ended := e.claim("ended", "me", longTTL)
		e.append(ended, store.JournalAppendParams{After: 1, Entries: entries("end", 1), Status: hitchtype.StatusFailed,
			Outcome: json.RawMessage(`{"reason":"test"}`)})
		got, err := e.s.LeaseRenewMany(e.ctx, store.LeaseRenewManyParams{Owner: "me", TTL: longTTL, Leases: []store.LeaseHeld{
			{RunID: "held", Token: held.Token}, {RunID: "cancelled", Token: cancelled.Token},
			{RunID: "lost", Token: lost.Token}, {RunID: "ended", Token: ended.Token}, {RunID: "missing", Token: 1},
		}})
		if err != nil {
			t.Fatalf("renew many: %v", err)
		}
		want := []store.LeaseRenewal{{RunID: "held", Renewed: true}, {RunID: "cancelled", Renewed: true, CancelRequested: true},
			{RunID: "lost"}, {RunID: "ended"}, {RunID: "missing"}}
		if !slices.Equal(got, want) {
			t.Fatalf("renew many: %+v, want %+v", got, want)
		}
		if r := e.get("held"); !r.LeaseExpires.After(held.ExpiresAt.Add(30 * time.Minute)) {
			t.Fatalf("not extended: was %v, now %v", held.ExpiresAt, r.LeaseExpires)
		}
		if r := e.get("lost"); r.LeaseOwner != "other" || !sameTime(r.LeaseExpires, taken.ExpiresAt) {
			t.Fatalf("a lost lease was renewed: %+v", r)
		}
		if _, err := e.s.LeaseRenewMany(e.ctx, store.LeaseRenewManyParams{Owner: "me", Leases: []store.LeaseHeld{{RunID: "held", Token: held.Token}}}); err == nil {
			t.Fatal("renew many without a ttl succeeded")
		}
		none, err := e.s.LeaseRenewMany(e.ctx, store.LeaseRenewManyParams{Owner: "me", TTL: longTTL})
		if err != nil || len(none) != 0 {
			t.Fatalf("renew none: %v %v", none, err)
		}
	})

	t.Run("CancelRequested", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		for _, id := range []string{"a", "b", "c"} {
			e.create(id)
		}
		for _, id := range []string{"a", "c"} {
			if _, err := e.s.RunRequestCancel(e.ctx, store.RunRequestCancelParams{ID: id}); err != nil {
				t.Fatal(err)
			}
		}
		l := e.claim("c", "me", longTTL)
		e.append(l, store.JournalAppendParams{After: 1, Entries: entries("end", 1), Status: hitchtype.StatusCancelled,
			Outcome: json.RawMessage(`{"reason":"test"}`)})
		got, err := e.s.RunCancelRequested(e.ctx, []string{"a", "b", "c", "missing"})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, []string{"a"}) {
			t.Fatalf("cancel requested: %v, want [a] (b has none, c has ended)", got)
		}
		if got, err := e.s.RunCancelRequested(e.ctx, nil); err != nil || len(got) != 0 {
			t.Fatalf("no ids: %v %v", got, err)
		}
	})
}
