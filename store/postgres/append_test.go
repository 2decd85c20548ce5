package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"os"
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
	url := os.Getenv("HITCH_TEST_POSTGRES")
	if url == "" {
		t.Skip("HITCH_TEST_POSTGRES is not set: set it to a postgres:// URL of a database the tests may create schemas in")
	}
	t.Parallel()
	ctr := &counter{}
	s := openPlanStore(t, url, withTracer(ctr))
	ctx := t.Context()
	start := []store.EntryInput{{Kind: "run.started", Data: json.RawMessage(`{}`)}}
	for _, r := range []store.RunCreateParams{
		{ID: "parent", Agent: "x", Entries: start},
		{ID: "run", Agent: "x", ParentID: "parent", RootID: "parent", Depth: 1, Entries: start},
		{ID: "child", Agent: "x", ParentID: "run", RootID: "parent", Depth: 2, Entries: start},
	} {
		if _, _, err := s.RunCreate(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(id string) int64 {
		ls, err := s.LeaseClaim(ctx, store.LeaseClaimParams{Owner: "me", TTL: time.Hour, RunID: id})
		if err != nil {
			t.Fatal(err)
		}
		return ls[0].Token
	}
	pt := claim("parent")
	if _, err := s.JournalAppend(ctx, store.JournalAppendParams{RunID: "parent", Token: pt, After: 1,
		Status: hitchtype.StatusWaiting, Entries: start}); err != nil {
		t.Fatal(err)
	}
	token := claim("run")
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
	url := os.Getenv("HITCH_TEST_POSTGRES")
	if url == "" {
		t.Skip("HITCH_TEST_POSTGRES is not set: set it to a postgres:// URL of a database the tests may create schemas in")
	}
	t.Parallel()
	s := openPlanStore(t, url)
	ctx := t.Context()
	start := []store.EntryInput{{Kind: "run.started", Data: json.RawMessage(`{}`)}}
	for _, id := range []string{"ended", "live", "queued"} {
		if _, _, err := s.RunCreate(ctx, store.RunCreateParams{ID: id, Agent: "x", Entries: start}); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(id string) int64 {
		ls, err := s.LeaseClaim(ctx, store.LeaseClaimParams{Owner: "me", TTL: time.Hour, RunID: id})
		if err != nil {
			t.Fatal(err)
		}
		return ls[0].Token
	}
	live := claim("live")
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
	ended := claim("ended")
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
