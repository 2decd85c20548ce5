package postgres

import (
	"context"
	"encoding/json"
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
