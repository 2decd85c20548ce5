package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// TestEndIsOneStatement checks that an append ending a run, charging no
// budget, is sent as one statement (no transaction around it), and that it
// still carries the end to the run's family: its child is asked to cancel,
// its waiting parent is made due.
func TestEndIsOneStatement(t *testing.T) {
	t.Parallel()
	ctr := &counter{}
	s := openPlanStore(t, withTracer(ctr))
	ctx := t.Context()
	start := []store.EntryInput{{Kind: "run.started", Data: json.RawMessage(`{}`)}}
	startRuns(t, s,
		store.RunCreateParams{ID: "parent", Agent: "x"},
		store.RunCreateParams{ID: "run", Agent: "x", ParentID: "parent", RootID: "parent", Depth: 1},
		store.RunCreateParams{ID: "child", Agent: "x", ParentID: "run", RootID: "parent", Depth: 2})
	pt := claimToken(t, s, "parent")
	if _, err := s.JournalAppend(ctx, store.JournalAppendParams{RunID: "parent", Token: pt, After: 1,
		Status: hitchtype.StatusWaiting, Entries: start}); err != nil {
		t.Fatal(err)
	}
	token := claimToken(t, s, "run")
	before := ctr.n()
	got, err := s.JournalAppend(ctx, store.JournalAppendParams{RunID: "run", Token: token, After: 1,
		Status: hitchtype.StatusCompleted, Outcome: json.RawMessage(`{"answer":1}`), Entries: start})
	if err != nil || got.Status != hitchtype.StatusCompleted || got.Position != 2 {
		t.Fatalf("end: %+v %v", got, err)
	}
	if n := ctr.n() - before; n != 1 {
		t.Errorf("the end sent %d statements, want 1", n)
	}
	child, err := s.RunGet(ctx, "child")
	if err != nil || !child.CancelRequested {
		t.Errorf("child: %+v %v, want a cancel request", child, err)
	}
	parent, err := s.RunGet(ctx, "parent")
	if err != nil || parent.WakeAt.IsZero() {
		t.Errorf("parent: %+v %v, want it due", parent, err)
	}
}

// TestJournalRowsHaveRuns checks what the journal's writers promise in
// place of a foreign key: refused appends, grouped or alone, write no
// entry, and retention leaves no entry of a run it deleted.
func TestJournalRowsHaveRuns(t *testing.T) {
	t.Parallel()
	s := openPlanStore(t)
	ctx := t.Context()
	start := []store.EntryInput{{Kind: "run.started", Data: json.RawMessage(`{}`)}}
	startRuns(t, s, store.RunCreateParams{ID: "ended", Agent: "x"}, store.RunCreateParams{ID: "live", Agent: "x"},
		store.RunCreateParams{ID: "queued", Agent: "x"})
	live := claimToken(t, s, "live")
	// Sent together, so that the refused ones can share a group with the
	// one that is written.
	appends := []struct {
		p    store.JournalAppendParams
		want error
	}{
		{store.JournalAppendParams{RunID: "live", Token: live, After: 1}, nil},
		{store.JournalAppendParams{RunID: "missing", Token: 1, After: 1}, store.ErrNotFound},
		{store.JournalAppendParams{RunID: "queued", Token: 1, After: 1}, store.ErrFenced},
		{store.JournalAppendParams{RunID: "ended", Token: 1, After: 1}, store.ErrFenced},
	}
	var wg sync.WaitGroup
	for _, a := range appends {
		a.p.Entries = []store.EntryInput{{Kind: "test.a", Data: json.RawMessage(`{}`)}, {Kind: "test.b", Data: json.RawMessage(`{}`)}}
		wg.Go(func() {
			if _, err := s.JournalAppend(ctx, a.p); !errors.Is(err, a.want) {
				t.Errorf("append to %s: %v, want %v", a.p.RunID, err, a.want)
			}
		})
	}
	wg.Wait()
	ended := claimToken(t, s, "ended")
	if _, err := s.JournalAppend(ctx, store.JournalAppendParams{RunID: "ended", Token: ended, After: 1,
		Status: hitchtype.StatusCompleted, Outcome: json.RawMessage(`{}`), Entries: start}); err != nil {
		t.Fatal(err)
	}
	res, err := s.RunPrune(ctx, store.RunPruneParams{Before: time.Now().Add(time.Hour)})
	if err != nil || len(res.Roots) != 1 || res.Roots[0] != "ended" {
		t.Fatalf("prune: %+v %v, want the ended run", res, err)
	}
	var entries, orphans int
	if err := s.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE NOT EXISTS
		(SELECT 1 FROM hitch_runs r WHERE r.seq = j.run_seq)) FROM hitch_journal j`).Scan(&entries, &orphans); err != nil {
		t.Fatal(err)
	}
	// live: run.started and the two appended; queued: run.started.
	if entries != 4 || orphans != 0 {
		t.Errorf("the journal holds %d entries, %d of them of no run; want 4 and none", entries, orphans)
	}
}

// counter is a pgx tracer that counts the statements sent.
type counter struct {
	mu    sync.Mutex
	count int
}

func (c *counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.mu.Lock()
	c.count++
	c.mu.Unlock()
	return ctx
}

func (c *counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *counter) n() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count
}
