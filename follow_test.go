package hitch_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/tool"
)

// TestFollowersShareOneReader: twenty followers of one run on the node that
// drives it, and five on another runtime of the same store (which sees the
// commits at its poll), each see the run's whole journal in order, each
// entry once, and stop after its terminal entry.
func TestFollowersShareOneReader(t *testing.T) {
	turns := []scripted.Turn{}
	for i := range 5 {
		turns = append(turns, scripted.Turn{Calls: []scripted.Call{{Name: "add", Args: fmt.Sprintf(`{"a":%d,"b":1}`, i)}}})
	}
	turns = append(turns, scripted.Turn{Text: "done"})
	a := build(t, hitch.Spec{Model: scripted.New("m", scripted.Script{Turns: turns}), Tools: []tool.Tool{addTool(t, nil)}})
	rt, st := setup(t, a)
	other, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{a}, FollowPoll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.Background())
	ctx := t.Context()
	res, err := rt.Start(ctx, a, "add", hitch.Detached())
	if err != nil {
		t.Fatal(err)
	}
	id := res.Run.ID
	got := make([][]int64, 25)
	var wg sync.WaitGroup
	for i := range got {
		on := rt
		if i >= 20 {
			on = other
		}
		wg.Go(func() {
			for e, err := range on.Follow(ctx, id, 0) {
				if err != nil {
					t.Errorf("follower %d: %v", i, err)
					return
				}
				got[i] = append(got[i], e.Pos)
			}
		})
	}
	if _, err := rt.Await(ctx, id); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	journal, err := rt.Journal(ctx, id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range got {
		if len(g) != len(journal) {
			t.Fatalf("follower %d saw %d entries, the journal has %d: %v", i, len(g), len(journal), g)
		}
		for k, pos := range g {
			if pos != journal[k].Pos {
				t.Fatalf("follower %d: entry %d is %d, want %d", i, k, pos, journal[k].Pos)
			}
		}
	}
	// A follower of an ended run gets what it has not seen, and stops.
	n := 0
	for _, err := range rt.Follow(ctx, id, 3) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != len(journal)-3 {
		t.Fatalf("a follower after 3 of an ended run got %d entries, want %d", n, len(journal)-3)
	}
	// One that has every entry gets nothing more, and stops.
	for e, err := range rt.Follow(ctx, id, int64(len(journal))) {
		t.Fatalf("a follower after the last entry got %d, %v", e.Pos, err)
	}
	for _, err := range rt.Follow(ctx, "no-such-run", 0) {
		if !errors.Is(err, hitch.ErrNotFound) {
			t.Fatalf("following a missing run: %v", err)
		}
	}
}
