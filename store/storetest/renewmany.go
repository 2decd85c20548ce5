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
// and the cancel requests a node reads for the runs it drives.
func testLeaseRenewMany(t *testing.T, open opener) {
	t.Run("Mixed", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		held := e.createClaimed("held", "me", time.Minute)
		cancelled := e.createClaimed("cancelled", "me", time.Minute)
		e.requestCancel("cancelled")
		lost := e.expired("lost", "me")
		taken := e.claim("lost", "other", longTTL)
		ended := e.createClaimed("ended", "me", longTTL)
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
		for _, id := range []string{"a", "b", "c", "d", "e", "f", "g"} {
			e.create(id)
		}
		leases := map[string]store.Lease{}
		for _, id := range []string{"a", "b", "c", "f", "g"} {
			leases[id] = e.claim(id, "me", longTTL)
		}
		e.claim("d", "other", longTTL)
		for _, id := range []string{"a", "c", "d", "e", "f", "g"} {
			if _, err := e.s.RunRequestCancel(e.ctx, store.RunRequestCancelParams{ID: id}); err != nil {
				t.Fatal(err)
			}
		}
		e.append(leases["c"], store.JournalAppendParams{After: 1, Entries: entries("end", 1), Status: hitchtype.StatusCancelled,
			Outcome: json.RawMessage(`{"reason":"test"}`)})
		ask := func(p store.RunCancelRequestedParams) []string {
			t.Helper()
			got, err := e.s.RunCancelRequested(e.ctx, p)
			if err != nil {
				t.Fatalf("cancel requested %+v: %v", p, err)
			}
			return got
		}
		// b has no cancel, c has ended, d is another node's, e nobody's.
		if got := ask(store.RunCancelRequestedParams{Owner: "me"}); !slices.Equal(got, []string{"a", "f", "g"}) {
			t.Fatalf("cancel requested: %v, want [a f g]", got)
		}
		if got := ask(store.RunCancelRequestedParams{Owner: "me", Limit: 2}); !slices.Equal(got, []string{"a", "f"}) {
			t.Fatalf("first page of 2: %v, want [a f]", got)
		}
		if got := ask(store.RunCancelRequestedParams{Owner: "me", After: "f", Limit: 2}); !slices.Equal(got, []string{"g"}) {
			t.Fatalf("page after f: %v, want [g]", got)
		}
		if got := ask(store.RunCancelRequestedParams{Owner: "other"}); !slices.Equal(got, []string{"d"}) {
			t.Fatalf("the other node's: %v, want [d]", got)
		}
		if got := ask(store.RunCancelRequestedParams{Owner: "nobody"}); len(got) != 0 {
			t.Fatalf("a node with no runs: %v", got)
		}
		for _, p := range []store.RunCancelRequestedParams{{}, {Owner: "me", Limit: -1}, {Owner: "me", Limit: store.MaxListLimit + 1}} {
			if got, err := e.s.RunCancelRequested(e.ctx, p); err == nil {
				t.Errorf("cancel requested %+v: %v, want an error", p, got)
			}
		}
	})
}
