package hitch_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/hitchtest"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/store/sqlite"
)

// TestLeaderPrunesSettledRuns: the leader prunes families past the
// retention by the store's clock; a parked run and a young one stay; a
// pruned run's journal answers not found, not an empty list.
func TestLeaderPrunesSettledRuns(t *testing.T) {
	t.Parallel()
	clk := &aheadClock{}
	st := hitchtest.OpenStore(t, filepath.Join(t.TempDir(), "hitch.db"), sqlite.WithClock(clk.now))
	done := build(t, hitch.Spec{Name: "done", Model: scripted.New("m", scripted.Script{Turns: []scripted.Turn{{Text: "ok"}}})})
	parked := mustWaitAgent(t, scripted.Call{Name: "await_event", Args: `{"name":"later","timeout":"100h"}`})
	rt := hitchtest.Open(t, hitch.Config{Store: st, Agents: []*hitch.Agent{done, parked}, PruneEvery: 10 * time.Millisecond,
		Retention: 24 * time.Hour, LeaderTTL: time.Second})
	ctx := context.Background()
	old := runToRest(t, rt, done, "old")
	wait := runToRest(t, rt, parked, "wait", hitch.WithID("parked"))
	if old.Status != hitchtype.StatusCompleted || wait.Status != hitchtype.StatusWaiting {
		t.Fatalf("old %s, parked %s", old.Status, wait.Status)
	}
	clk.advance(25 * time.Hour)
	young := runToRest(t, rt, done, "young")

	pruned := hitch.WatchPrunes(rt)
	lctx, stop := context.WithCancel(ctx)
	led := make(chan error, 1)
	go func() { led <- rt.Lead(lctx) }()
	defer func() {
		stop()
		if err := <-led; err != nil {
			t.Error(err)
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := rt.Close(cctx); err != nil {
			t.Error(err)
		}
	}()
	for {
		if err := <-pruned; err != nil {
			t.Fatal(err)
		}
		if _, err := rt.Get(ctx, old.ID); errors.Is(err, hitch.ErrNotFound) {
			break
		}
	}
	if _, err := rt.Journal(ctx, old.ID, 0, 10); !errors.Is(err, hitch.ErrNotFound) {
		t.Errorf("journal of a pruned run: %v", err)
	}
	for _, id := range []string{young.ID, "parked"} {
		if _, err := rt.Get(ctx, id); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
	// Dry run and an explicit prune see nothing more to do.
	res, err := rt.Prune(ctx, hitch.PruneParams{DryRun: true})
	if err != nil || len(res.Roots) != 0 {
		t.Errorf("dry run after the leader pruned: %+v %v", res, err)
	}
}
