package hitch_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/tool"
)

func TestFamilyBudgetExhaustedByTheThirdChild(t *testing.T) {
	t.Parallel()
	kid := child(t, hitch.Spec{Model: scripted.New("kid", scripted.Script{Turns: []scripted.Turn{{Text: "found it"}}})})
	boss := build(t, hitch.Spec{Name: "boss", Model: scripted.New("boss", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{delegate("a"), delegate("b"), delegate("c")}},
		{Text: "never reached"},
	}}), SubAgents: []*hitch.Agent{kid}, Limits: hitch.Limits{MaxChildren: 3},
		// The boss's first call and two children's calls fit; the third
		// child's does not.
		Budget: &hitch.Budget{ModelCalls: 3}})
	rt, st := setup(t, boss)
	ctx := context.Background()
	run := runToRest(t, rt, boss, "go")
	if run.Status != hitchtype.StatusBudgetExhausted || run.Outcome.Reason != "model_calls" {
		t.Fatalf("root: %s %+v", run.Status, run.Outcome)
	}
	kids, err := st.RunList(ctx, store.RunListParams{ParentID: run.ID})
	if err != nil || len(kids) != 3 {
		t.Fatalf("children: %v %v", kids, err)
	}
	byStatus := map[hitchtype.Status]int{}
	for _, k := range kids {
		byStatus[k.Status]++
	}
	if byStatus[hitchtype.StatusCompleted] != 2 || byStatus[hitchtype.StatusBudgetExhausted] != 1 {
		t.Errorf("children ended %v, want 2 completed and 1 budget_exhausted", byStatus)
	}
	limits, used, ok, err := rt.FamilyBudget(ctx, run.ID)
	if err != nil || !ok || used.ModelCalls != 3 || limits.ModelCalls != 3 || used.ToolCalls != 3 {
		t.Errorf("family budget: limits %+v used %+v %v %v", limits, used, ok, err)
	}
	if msgs := strings.Join(told(journal(t, rt, run.ID)), "\n"); !strings.Contains(msgs, "ended budget_exhausted (model_calls)") {
		t.Errorf("the parent was not told how the child ended:\n%s", msgs)
	}
}

func TestTokenBudgets(t *testing.T) {
	t.Parallel()
	loop := scripted.Script{Repeat: true, Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: "add", Args: `{"a":1,"b":1}`}}}}}
	t.Run("per run", func(t *testing.T) {
		t.Parallel()
		a := build(t, hitch.Spec{Model: scripted.New("loop", loop), Tools: []tool.Tool{addTool(t, nil)}, Limits: hitch.Limits{MaxTokens: 300}})
		rt, _ := setup(t, a)
		run := runToRest(t, rt, a, "go")
		if run.Status != hitchtype.StatusBudgetExhausted || run.Outcome.Reason != "tokens" || *run.Outcome.Usage.InputTokens+*run.Outcome.Usage.OutputTokens < 300 {
			t.Fatalf("%s %+v", run.Status, run.Outcome)
		}
	})
	t.Run("family", func(t *testing.T) {
		t.Parallel()
		a := build(t, hitch.Spec{Model: scripted.New("loop", loop), Tools: []tool.Tool{addTool(t, nil)}, Budget: &hitch.Budget{Tokens: 500}})
		rt, _ := setup(t, a)
		run := runToRest(t, rt, a, "go")
		_, used, _, _ := rt.FamilyBudget(context.Background(), run.ID)
		if run.Status != hitchtype.StatusBudgetExhausted || run.Outcome.Reason != "tokens" || used.Tokens > 500+200 {
			t.Fatalf("%s %+v, used %+v", run.Status, run.Outcome, used)
		}
	})
	t.Run("unverifiable", func(t *testing.T) {
		t.Parallel()
		// A reply without usage ends the run at once, per run as per
		// family: its tool calls do not run, and a final text does not
		// complete.
		calling := scripted.Script{Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: "add", Args: `{"a":1,"b":1}`}}, NoUsage: true}, {Text: "x"}}}
		final := scripted.Script{Turns: []scripted.Turn{{Text: "x", NoUsage: true}}}
		for i, tc := range []struct {
			script scripted.Script
			lim    hitch.Limits
			budget *hitch.Budget
		}{
			{calling, hitch.Limits{MaxTokens: 1000}, nil},
			{calling, hitch.Limits{}, &hitch.Budget{Tokens: 1000}},
			{final, hitch.Limits{MaxTokens: 1000}, nil},
			{final, hitch.Limits{}, &hitch.Budget{Tokens: 1000}},
		} {
			var calls atomic.Int64
			a := build(t, hitch.Spec{Model: scripted.New("mute", tc.script), Tools: []tool.Tool{addTool(t, &calls)}, Limits: tc.lim, Budget: tc.budget})
			rt, _ := setup(t, a)
			run := runToRest(t, rt, a, "go")
			if run.Status != hitchtype.StatusFailed || run.Outcome.Reason != "budget_unverifiable" || calls.Load() != 0 {
				t.Errorf("case %d: %s %+v, %d tool calls ran", i, run.Status, run.Outcome, calls.Load())
			}
		}
	})
}

func TestUSDBudgetAndCost(t *testing.T) {
	t.Parallel()
	m := scripted.New("priced", scripted.Script{Repeat: true, Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: "add", Args: `{"a":1,"b":1}`}}}}})
	a := build(t, hitch.Spec{Model: m, Tools: []tool.Tool{addTool(t, nil)}, Budget: &hitch.Budget{USD: 0.002}, Limits: hitch.Limits{ModelAttempts: 100}})
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "usd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// $10 per million input and output tokens: each turn costs a few ten-thousandths of a dollar.
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{a}, Prices: model.Prices{"scripted/priced": {Input: 10, Output: 10, CachedInput: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	run := runToRest(t, rt, a, "go")
	if run.Status != hitchtype.StatusBudgetExhausted || run.Outcome.Reason != "usd" || run.Outcome.CostUSD == nil || *run.Outcome.CostUSD < 0.0015 {
		t.Fatalf("%s %+v", run.Status, run.Outcome)
	}
	// Without a price the budget cannot be kept.
	b := build(t, hitch.Spec{Name: "unpriced", Model: scripted.New("nameless", scripted.Script{Turns: []scripted.Turn{{Text: "x"}}}), Budget: &hitch.Budget{USD: 1}})
	rt2, _ := setup(t, b)
	run = runToRest(t, rt2, b, "go")
	if run.Status != hitchtype.StatusFailed || run.Outcome.Reason != "budget_unverifiable" || !strings.Contains(run.Outcome.Error, "no price") {
		t.Fatalf("unpriced: %s %+v", run.Status, run.Outcome)
	}
}

func TestWallTimeBudget(t *testing.T) {
	t.Parallel()
	m := scripted.New("slow", scripted.Script{Repeat: true, Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: "add", Args: `{"a":1,"b":1}`}}, Delay: 1500 * time.Millisecond}}})
	a := build(t, hitch.Spec{Model: m, Tools: []tool.Tool{addTool(t, nil)}, Budget: &hitch.Budget{WallTime: time.Second}})
	rt, _ := setup(t, a)
	run := runToRest(t, rt, a, "go")
	if run.Status != hitchtype.StatusBudgetExhausted || run.Outcome.Reason != "wall_time" || run.Outcome.Attempts != 1 {
		t.Fatalf("%s %+v", run.Status, run.Outcome)
	}
}
