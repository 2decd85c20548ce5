package engine

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/tool"
)

// blocking is a tool whose body waits until gate is closed.
type blocking struct {
	entered chan<- struct{}
	gate    <-chan struct{}
}

func (blocking) Info() tool.Info {
	return tool.Info{Name: "wait", Schema: json.RawMessage(`{"type":"object"}`), Timeout: tool.Infinite}
}

func (b blocking) Call(ctx context.Context, _ json.RawMessage) (string, error) {
	b.entered <- struct{}{}
	select {
	case <-b.gate:
		return "done", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// TestAWaitHoldsNoStepSlot: with one step slot, a run waiting on a slow
// model or a slow tool body leaves the slot free, so another run's steps
// go on and it ends while the first still waits.
func TestAWaitHoldsNoStepSlot(t *testing.T) {
	for _, wait := range []string{"model", "tool"} {
		t.Run(wait, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			st, _ := openClock(t)
			entered, gate := make(chan struct{}, 1), make(chan struct{})
			var slow *Agent
			if wait == "model" {
				slow = testAgent(gated{Model: scripted.New("slow", scripted.Script{Turns: []scripted.Turn{{Text: "late"}}}), entered: entered, gate: gate})
			} else {
				slow = testAgent(scripted.New("slow", scripted.Script{Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: "wait"}}}, {Text: "late"}}}))
				slow.Tools = []tool.Tool{blocking{entered: entered, gate: gate}}
				if err := slow.Prepare(); err != nil {
					t.Fatal(err)
				}
			}
			slow.Name = "slow"
			fast := testAgent(scripted.New("fast", scripted.Script{Turns: []scripted.Turn{{Text: "soon"}}}))
			fast.Name = "fast"
			e := New(Config{Store: st, Owner: "node",
				Agents: func(name string, _ int) (*Agent, bool) {
					if name == "slow" {
						return slow, true
					}
					return fast, true
				},
				LeaseTTL: time.Minute, RenewEvery: time.Hour, CancelPoll: time.Hour, ForceSettleGrace: time.Minute,
				AwaitPoll: 5 * time.Millisecond, MaxRunners: 8, StepConcurrency: 1})
			defer e.Close(ctx)
			if _, err := e.Start(ctx, slow, StartParams{ID: "slow", Input: "hi"}); err != nil {
				t.Fatal(err)
			}
			<-entered
			if _, err := e.Start(ctx, fast, StartParams{ID: "fast", Input: "hi"}); err != nil {
				t.Fatal(err)
			}
			run, err := e.Await(ctx, "fast")
			if err != nil {
				t.Fatalf("the other run did not end while the first waited on its %s: %v", wait, err)
			}
			if run.Status != hitchtype.StatusCompleted {
				t.Fatalf("the other run ended %s, want completed", run.Status)
			}
			if n := len(e.steps); n != 0 {
				t.Errorf("%d step slots held while the only live run waits on its %s, want 0", n, wait)
			}
			close(gate)
			if run, err := e.Await(ctx, "slow"); err != nil || run.Status != hitchtype.StatusCompleted {
				t.Fatalf("the slow run: %v, %v; want completed", run.Status, err)
			}
			if n := len(e.steps); n != 0 {
				t.Errorf("%d step slots held after every run ended, want 0", n)
			}
		})
	}
}
