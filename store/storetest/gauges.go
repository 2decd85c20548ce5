package storetest

import (
	"testing"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// testGauges checks store.GaugeReader on the runs it counts: a queued run
// without a lease and a waiting run whose wake has come are due; a live
// lease, a wake still to come, a wait for a claim by id and an end are
// not. Parked gives each waiting run's last entry, newest run first.
func testGauges(t *testing.T, open opener) {
	e := newEnv(t, open)
	g := face[store.GaugeReader](t, e.s, "store.GaugeReader")
	due := func(want int, how string) {
		t.Helper()
		if n, err := g.RunsDue(e.ctx); err != nil || n != want {
			t.Fatalf("%s: %d runs due, %v; want %d", how, n, err, want)
		}
	}
	due(0, "an empty store")
	e.create("queued")
	due(1, "a queued run")
	e.createClaimed("leased", "node", longTTL)
	due(1, "a leased run added")
	for _, w := range []struct {
		id   string
		wake time.Time
	}{{"w1", e.now().Add(time.Hour)}, {"w2", time.Time{}}, {"w3", e.now().Add(-time.Second)}} { // w3 woken
		e.create(w.id)
		e.wait(w.id, w.wake)
	}
	due(2, "three waiting runs added, one woken")
	e.create("ended")
	e.end("ended", hitchtype.StatusCompleted)
	due(2, "an ended run added")

	parked, err := g.Parked(e.ctx, 2)
	if err != nil || len(parked) != 2 {
		t.Fatalf("parked: %+v %v, want 2", parked, err)
	}
	// Newest first: the ids follow the creations, so a clock that stands
	// still gives the same order.
	for i, id := range []string{"w3", "w2"} {
		if p := parked[i]; p.RunID != id || p.Kind != "test.wait" || p.Pos != e.get(id).Position {
			t.Errorf("parked %d: %+v, want the last entry of %s", i, p, id)
		}
	}
	for _, limit := range []int{0, store.MaxListLimit + 1} {
		if _, err := g.Parked(e.ctx, limit); err == nil {
			t.Errorf("parked with limit %d was accepted", limit)
		}
	}
}
