package retention_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/retention"
	"github.com/hitch-dev/hitch/internal/testclock"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t *testing.T) (*sqlite.Store, *testclock.Clock) {
	t.Helper()
	clk := testclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "hitch.db"), sqlite.WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, clk
}

// settled creates a run and ends it.
func settled(t *testing.T, st store.Store, id string) {
	t.Helper()
	ctx := t.Context()
	if _, _, err := st.RunCreate(ctx, store.RunCreateParams{ID: id, Agent: "a", Version: 1, InputHash: "h",
		Entries: []store.EntryInput{{Kind: hitchtype.KindRunStarted, Data: []byte(`{}`)}}}); err != nil {
		t.Fatal(err)
	}
	ls, err := st.LeaseClaim(ctx, store.LeaseClaimParams{RunID: id, Owner: "n", TTL: time.Minute})
	if err != nil || len(ls) != 1 {
		t.Fatalf("claim %s: %v", id, err)
	}
	if _, err := st.JournalAppend(ctx, store.JournalAppendParams{RunID: id, Token: ls[0].Token, After: 1,
		Entries: []store.EntryInput{{Kind: hitchtype.KindRunEnded, Data: []byte(`{}`)}},
		Status:  hitchtype.StatusCompleted, Outcome: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
}

// TestPrune: an explicit prune takes the config's retention and batch,
// deletes what is older in batches, and refuses bad parameters.
func TestPrune(t *testing.T) {
	st, clk := open(t)
	for _, id := range []string{"a", "b", "c"} {
		settled(t, st, id)
	}
	clk.Add(2 * time.Hour)
	settled(t, st, "young")
	p := retention.New(retention.Config{Store: st, Retention: time.Hour, Batch: 2})
	dry, err := p.Prune(t.Context(), hitchtype.PruneParams{DryRun: true})
	if err != nil || len(dry.Roots) != 2 {
		t.Fatalf("dry run (one batch of 2): %+v %v", dry, err)
	}
	res, err := p.Prune(t.Context(), hitchtype.PruneParams{})
	if err != nil || len(res.Roots) != 3 || res.Runs != 3 || !res.Before.Equal(clk.Now().Add(-time.Hour)) {
		t.Fatalf("prune: %+v %v", res, err)
	}
	if _, err := st.RunGet(t.Context(), "young"); err != nil {
		t.Fatalf("the young run: %v", err)
	}
	for _, bad := range []hitchtype.PruneParams{{OlderThan: -1}, {Batch: store.MaxPruneLimit + 1}, {MaxBatches: -1}} {
		if _, err := p.Prune(t.Context(), bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// TestService: the service prunes only while its node leads, signals each
// pass, reports a failing pass and goes on, and stops.
func TestService(t *testing.T) {
	st, clk := open(t)
	settled(t, st, "old")
	clk.Add(2 * time.Hour)
	var leads atomic.Bool
	errs := make(chan error, 16)
	p := retention.New(retention.Config{Store: st, Retention: time.Hour, Batch: 10, Every: time.Millisecond, MaxBatches: 1,
		IsLeader: leads.Load, OnError: func(err error) {
			select { // never block the service's loop
			case errs <- err:
			default:
			}
		}})
	passes, skipped := p.TestSignals.Pruned.Init(), p.TestSignals.Skipped.Init()
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer p.Stop(context.Background())
	<-skipped
	<-skipped
	if len(passes) > 0 {
		t.Fatalf("a pass while not leading: %v", <-passes)
	}
	if _, err := st.RunGet(t.Context(), "old"); err != nil {
		t.Fatalf("pruned while not leading: %v", err)
	}
	leads.Store(true)
	if err := <-passes; err != nil {
		t.Fatal(err)
	}
	if _, err := st.RunGet(t.Context(), "old"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after a pass as leader: %v", err)
	}
	st.Close()
	// A pass may have ended between the first and the close: skip passes
	// until one sees the closed store (each pass after it does).
	for err := range passes {
		if err != nil {
			break
		}
	}
	if err := <-errs; err == nil {
		t.Fatal("no error reported")
	}
	if err := p.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
}
