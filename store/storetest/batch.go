package storetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// notifyWait bounds how long a notifier may take to tell of new work: its
// wakes are hints that cross a connection, so they are waited for, not
// assumed.
const notifyWait = 10 * time.Second

// oddData are entry data written as a caller may write them: spacing, key
// order, escapes and number spellings that a store normalising its JSON
// would change. A runner's replay hashes what it reads, so a store must
// give back exactly the bytes it was given.
var oddData = []json.RawMessage{
	json.RawMessage(`{"b": 1,  "a": [1.0, 2e3, -0.0]}`),
	json.RawMessage(`{"s":"\u00e9t\u00e9 \ud83d\ude00","k":"","k":"twice"}`),
	json.RawMessage("{\n\t\"deep\": {\"x\": null, \"y\": [ {}, [] ]}\n}"),
	json.RawMessage(`12345678901234567890123456789`),
	json.RawMessage(`"plain text, \"quoted\""`),
	json.RawMessage(`[true,false,null]`),
}

func oddEntries() []store.EntryInput {
	es := make([]store.EntryInput, len(oddData))
	for i, d := range oddData {
		es[i] = store.EntryInput{Kind: fmt.Sprintf("test.odd%d", i), Data: d}
	}
	return es
}

// testEntryBytes checks that entries come back byte for byte as written,
// from a create and from an append.
func testEntryBytes(t *testing.T, open opener) {
	e := newEnv(t, open)
	e.createWith(store.RunCreateParams{ID: "r", Agent: "agent", Version: 1, InputHash: "h", Entries: oddEntries()})
	l := e.claim("r", "node", longTTL)
	e.append(l, store.JournalAppendParams{After: int64(len(oddData)), Entries: oddEntries()})
	got := e.read("r", 0, 0)
	want := append(oddEntries(), oddEntries()...)
	checkEntries(t, got, "r", 1, want) // byte for byte
}

// testNotifier checks the store.Notifier contract on a store that offers
// it: one channel for every call, and a wake after a run is created,
// released to wait for a time already past, asked to cancel, ended while
// its parent waits, and given back by its lease's holder.
func testNotifier(t *testing.T, open opener) {
	e := newEnv(t, open)
	n, ok := e.s.(store.Notifier)
	if !ok {
		t.Skipf("%T does not implement store.Notifier: nodes poll it", e.s)
	}
	ch := n.Wake()
	if ch == nil || n.Wake() != ch {
		t.Fatal("Wake returns a nil channel, or another channel on a second call")
	}
	// drain empties the channel, so that the next receive stands for
	// what happens after it. Wakes may come late, so a wake left from
	// before can be received after the drain: the contract allows that
	// (wakes are hints), and the checks below never depend on its absence.
	drain := func() {
		for {
			select {
			case <-ch:
			default:
				return
			}
		}
	}
	woken := func(what string) {
		t.Helper()
		timer := time.NewTimer(notifyWait)
		defer timer.Stop()
		select {
		case <-ch:
		case <-timer.C:
			t.Fatalf("no wake within %v after %s", notifyWait, what)
		}
	}
	// The listener may start with the first call: a created run must
	// wake it however soon after.
	drain()
	e.create("created")
	woken("a run was created")

	l := e.claim("created", "node", longTTL)
	drain()
	e.append(l, store.JournalAppendParams{After: 1, Entries: entries("w", 1), Status: hitchtype.StatusWaiting,
		WakeAt: e.now().Add(-time.Second)})
	woken("a run was released, due at once")

	e.createClaimed("cancelled", "node", longTTL)
	drain()
	if _, err := e.s.RunRequestCancel(e.ctx, store.RunRequestCancelParams{ID: "cancelled", By: "test", Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	woken("a cancel was requested")

	// A child's end makes its waiting parent due.
	e.create("parent")
	e.wait("parent", time.Time{})
	e.child("child", "parent")
	cl := e.claim("child", "node", longTTL)
	drain()
	e.append(cl, store.JournalAppendParams{After: 1, Entries: entries("end", 1), Status: hitchtype.StatusCompleted,
		Outcome: json.RawMessage(`{"why":"test"}`)})
	woken("a child ended, its parent waiting")

	// A lease given back leaves a claimable run.
	gl := e.createClaimed("given", "node", longTTL)
	drain()
	if _, err := e.s.LeaseRelease(e.ctx, store.LeaseReleaseParams{RunID: "given", Owner: "node", Token: gl.Token}); err != nil {
		t.Fatal(err)
	}
	woken("a lease was given back")
}

// testBatch checks what a write that fails part-way keeps: an append or a
// create is all or nothing, and appends that a driver commits together
// (SQLite's writer, PostgreSQL's group commit) fail alone: the others'
// entries are kept, the refused ones leave their runs as they were.
func testBatch(t *testing.T, open opener) {
	t.Run("AllOrNothing", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		bad := append(entries("ok", 3), store.EntryInput{Kind: "test.bad", Data: json.RawMessage(`{"unclosed":`)})
		if _, _, err := e.s.RunCreate(e.ctx, store.RunCreateParams{ID: "c", Agent: "agent", Version: 1, InputHash: "h", Entries: bad}); err == nil {
			t.Fatal("a create whose last entry is not JSON was taken")
		}
		_, err := e.s.RunGet(e.ctx, "c")
		wantErr(t, "run get after a refused create", err, store.ErrNotFound)

		l := e.createClaimed("a", "node", longTTL)
		before := e.get("a")
		big := append(entries("ok", 2), store.EntryInput{Kind: "test.big", Data: json.RawMessage(`"` + strings.Repeat("x", store.MaxEntryBytes) + `"`)})
		p := store.JournalAppendParams{RunID: "a", Token: l.Token, After: 1, Entries: big}
		if _, err := e.s.JournalAppend(e.ctx, p); err == nil {
			t.Fatal("an append whose last entry is too large was taken")
		}
		e.unchanged(before)
		p.Entries = bad
		if _, err := e.s.JournalAppend(e.ctx, p); err == nil {
			t.Fatal("an append whose last entry is not JSON was taken")
		}
		e.unchanged(before)
	})

	t.Run("ConcurrentAppendsFailAlone", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		const runs, rounds = 12, 5
		leases := make([]store.Lease, runs)
		for i := range leases {
			id := fmt.Sprintf("r%02d", i)
			e.create(id)
			leases[i] = e.claim(id, "node", longTTL)
		}
		pos := make([]int64, runs) // each run's journal length
		for i := range pos {
			pos[i] = 1
		}
		for round := range rounds {
			// In each round a third of the appends are refused: a stale
			// token (fenced) or a stale position (conflict).
			errs := make([]error, runs)
			var start, wg sync.WaitGroup
			start.Add(1)
			for i := range runs {
				p := store.JournalAppendParams{RunID: leases[i].Run.ID, Token: leases[i].Token, After: pos[i],
					Entries: entries(fmt.Sprintf("%d-%d", round, i), 2)}
				switch (i + round) % 6 {
				case 1:
					p.Token++
				case 4:
					p.After--
				}
				wg.Go(func() {
					start.Wait()
					_, errs[i] = e.s.JournalAppend(e.ctx, p)
				})
			}
			start.Done()
			wg.Wait()
			for i, err := range errs {
				id := leases[i].Run.ID
				switch (i + round) % 6 {
				case 1:
					wantErr(t, fmt.Sprintf("round %d: append to %s with a stale token", round, id), err, store.ErrFenced)
				case 4:
					wantErr(t, fmt.Sprintf("round %d: append to %s at a stale position", round, id), err, store.ErrConflict)
				default:
					if err != nil {
						t.Fatalf("round %d: append to %s, committed beside refused ones: %v", round, id, err)
					}
					pos[i] += 2
				}
			}
		}
		// Every kept append is in its journal, whole and in order; every
		// refused one left nothing.
		for i, l := range leases {
			got := e.read(l.Run.ID, 0, 0)
			want := entries(l.Run.ID, 1)
			for round := range rounds {
				if c := (i + round) % 6; c != 1 && c != 4 {
					want = append(want, entries(fmt.Sprintf("%d-%d", round, i), 2)...)
				}
			}
			checkEntries(t, got, l.Run.ID, 1, want)
			if r := e.get(l.Run.ID); r.Position != pos[i] || r.Status != hitchtype.StatusRunning || r.LeaseToken != l.Token {
				t.Fatalf("%s after the rounds: %+v, want position %d, running under token %d", l.Run.ID, r, pos[i], l.Token)
			}
		}
	})
}
