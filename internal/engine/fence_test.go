package engine

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/sqlite"
)

func testAgent(m *scripted.Model) *Agent {
	a := &Agent{Name: "a", Version: 1, Model: m, Policy: policy.AllowAll(), Limits: Limits{
		ModelAttempts: 8, RetryDelay: time.Millisecond, MaxRetryAfter: time.Second, ModelTimeout: time.Minute,
		PolicyTimeout: time.Second, ToolTimeout: time.Second, ToolConcurrency: 4, MaxToolResult: 1 << 20, CommandWait: time.Second,
	}}
	if err := a.Prepare(); err != nil {
		panic(err)
	}
	return a
}

func testEngine(st store.Store, owner string, a *Agent, ttl, renew time.Duration) *Engine {
	return New(Config{
		Store: st, Owner: owner,
		Agents:   func(string, int) (*Agent, bool) { return a, true },
		LeaseTTL: ttl, RenewEvery: renew, CancelPoll: time.Hour, ForceSettleGrace: time.Minute,
		AwaitPoll: 5 * time.Millisecond, MaxRunners: 8,
	})
}

// TestStaleRunnerIsFenced puts two runners on one run: the first loses its
// lease while its model call is in flight, the second claims the run and
// finishes it, and the first's append is refused, so it stops without
// writing anything.
func TestStaleRunnerIsFenced(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "fence.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	slow := scripted.New("slow", scripted.Script{Turns: []scripted.Turn{{Text: "from A", Delay: 300 * time.Millisecond}}})
	fast := scripted.New("fast", scripted.Script{Turns: []scripted.Turn{{Text: "from B"}}})
	// A never renews within its short TTL, as if its process had paused.
	engA := testEngine(st, "node-a", testAgent(slow), 50*time.Millisecond, time.Hour)
	engB := testEngine(st, "node-b", testAgent(fast), time.Minute, 20*time.Second)

	res, err := engA.Start(ctx, testAgent(slow), StartParams{ID: "r1", Input: "hi"})
	if err != nil || !res.Created {
		t.Fatalf("start: %+v %v", res, err)
	}
	engA.mu.Lock()
	ra := engA.active["r1"]
	engA.mu.Unlock()
	if ra == nil {
		t.Fatal("A is not driving the run")
	}
	// Wait for A's lease to lapse, then let B claim and finish the run.
	var claimed int
	for deadline := time.Now().Add(5 * time.Second); claimed == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		if claimed, err = engB.Work(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if claimed != 1 {
		t.Fatal("B never claimed the run")
	}
	run, err := engB.Await(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != hitchtype.StatusCompleted {
		t.Fatalf("status %s", run.Status)
	}
	// A wakes from its model call, tries to append, and is refused.
	<-ra.done
	if !errors.Is(ra.err, errFenced) {
		t.Errorf("stale runner stopped with %v, want a fencing error", ra.err)
	}
	es, err := st.JournalRead(ctx, store.JournalReadParams{RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	ended := 0
	for _, e := range es {
		if e.Kind == KindRunEnded {
			ended++
			if !strings.Contains(string(e.Data), "from B") {
				t.Errorf("outcome %s is not B's", e.Data)
			}
		}
		if e.Kind == KindModelReply && strings.Contains(string(e.Data), "from A") {
			t.Error("the stale runner's reply was journaled")
		}
	}
	if ended != 1 {
		t.Errorf("%d run.ended entries, want 1", ended)
	}
	if err := engA.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := engB.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
