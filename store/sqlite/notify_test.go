package sqlite

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// TestWakeOnlyWhenDue: the writer signals Wake before it answers the write
// that made a run due, and not for the writes of a step that leaves
// nothing to claim (a claim, an append, a park without a wake, a renewal),
// so that a node's steps do not make its sweeper pass. The clock stands
// still: nothing comes due by itself.
func TestWakeOnlyWhenDue(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	s := openT(t, filepath.Join(t.TempDir(), "hitch.db"), WithClock(func() time.Time { return now }))
	ctx := t.Context()
	ch := s.Wake()
	pending := func() bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	entry := []store.EntryInput{{Kind: "test.step", Data: json.RawMessage(`{}`)}}
	if _, _, err := s.RunCreate(ctx, store.RunCreateParams{ID: "r", Agent: "a", Entries: entry}); err != nil {
		t.Fatal(err)
	}
	if !pending() {
		t.Fatal("no wake pending when the create returned")
	}
	ls, err := s.LeaseClaim(ctx, store.LeaseClaimParams{Owner: "n", TTL: time.Minute, RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	l := ls[0]
	if _, err := s.LeaseRenew(ctx, store.LeaseRenewParams{RunID: "r", Owner: "n", Token: l.Token, TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	p := store.JournalAppendParams{RunID: "r", Token: l.Token, After: 1, Entries: entry}
	if _, err := s.JournalAppend(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.After, p.Status = 2, hitchtype.StatusRunning
	if _, err := s.JournalAppend(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.After, p.Status = 3, hitchtype.StatusWaiting // parked until claimed by id
	if _, err := s.JournalAppend(ctx, p); err != nil {
		t.Fatal(err)
	}
	if pending() {
		t.Fatal("a wake is pending after a claim, a renewal, appends and a park without a wake time")
	}
	ls, err = s.LeaseClaim(ctx, store.LeaseClaimParams{Owner: "n", TTL: time.Minute, RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	p = store.JournalAppendParams{RunID: "r", Token: ls[0].Token, After: 4, Entries: entry, Status: hitchtype.StatusWaiting, WakeAt: now.Add(time.Hour)}
	if _, err := s.JournalAppend(ctx, p); err != nil {
		t.Fatal(err)
	}
	if pending() {
		t.Fatal("a wake is pending after a park until a later time")
	}
	if _, err := s.RunRequestCancel(ctx, store.RunRequestCancelParams{ID: "r", By: "test", Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	if !pending() {
		t.Fatal("no wake pending when the cancel request returned")
	}
}
