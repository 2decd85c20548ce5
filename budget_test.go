package hitch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/hitchtest"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/store"
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
	st := hitchtest.OpenStore(t, filepath.Join(t.TempDir(), "usd.db"))
	// $10 per million input and output tokens: each turn costs a few ten-thousandths of a dollar.
	rt := hitchtest.Open(t, hitch.Config{Store: st, Agents: []*hitch.Agent{a}, Prices: model.Prices{"scripted/priced": {Input: 10, Output: 10, CachedInput: 10}}})
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

// journalCharged is what a family's journals say its budget was charged:
// one model call per model.attempt and its tokens (the reply's usage, or
// the attempt's reservation when no reply with usage was journaled), one
// tool call per call.started.
func journalCharged(t *testing.T, rt *hitch.Runtime, st store.Store, rootID string) hitch.Budget {
	t.Helper()
	runs, err := st.RunList(context.Background(), store.RunListParams{RootID: rootID})
	if err != nil {
		t.Fatal(err)
	}
	var b hitch.Budget
	for _, run := range runs {
		reserved := map[int]int64{}
		for _, e := range journal(t, rt, run.ID) {
			switch e.Kind {
			case hitchtype.KindModelAttempt:
				var a hitchtype.ModelAttempt
				mustDecode(t, e, &a)
				b.ModelCalls++
				reserved[a.Attempt] = a.ReservedTokens
			case hitchtype.KindModelReply:
				var r hitchtype.ModelReply
				mustDecode(t, e, &r)
				if u := r.Reply.Usage; u != nil && u.InputTokens != nil && u.OutputTokens != nil {
					reserved[r.Attempt] = *u.InputTokens + *u.OutputTokens
				}
			case hitchtype.KindCompacted:
				var c hitchtype.Compacted
				mustDecode(t, e, &c)
				if u := c.Usage; u != nil && u.InputTokens != nil && u.OutputTokens != nil {
					reserved[c.Attempt] = *u.InputTokens + *u.OutputTokens
				}
			case hitchtype.KindCallStarted:
				b.ToolCalls++
			}
		}
		for _, n := range reserved {
			b.Tokens += n
		}
	}
	return b
}

func mustDecode(t *testing.T, e store.Entry, v any) {
	t.Helper()
	if err := json.Unmarshal(e.Data, v); err != nil {
		t.Fatalf("entry %d of %s: %v", e.Pos, e.RunID, err)
	}
}

// chargesChild runs one budgeted run whose first policy decision never
// comes: the process is killed after the model's reply arrived and before
// it was journaled.
func chargesChild(db string) int {
	ctx := context.Background()
	a, err := chargesAgent(policy.Func(func(context.Context, policy.Action) (policy.Decision, error) {
		fmt.Println("IN_POLICY")
		select {}
	}))
	if err != nil {
		return childFail(err)
	}
	return childStart(ctx, db, hitch.Config{LeaseTTL: crashLeaseTTL}, a, "add 1 and 1", hitch.WithID("charged"))
}

func chargesAgent(pol policy.Policy) (*hitch.Agent, error) {
	add, err := tool.New("add", "Adds.", func(_ context.Context, in addArgs) (int, error) { return in.A + in.B, nil })
	if err != nil {
		return nil, err
	}
	return hitch.Build(hitch.Spec{Name: "charged", Tools: []tool.Tool{add}, Policy: pol,
		Budget: &hitch.Budget{Tokens: 100000, ModelCalls: 10, ToolCalls: 10},
		Model: scripted.New("charged", scripted.Script{Turns: []scripted.Turn{
			{Text: "let me add these two numbers with the tool", Calls: []scripted.Call{{Name: "add", Args: `{"a":1,"b":1}`}}}, {Text: "2"}}})})
}

// TestBudgetChargesFollowTheJournal kills a process after a model reply
// arrived and before it was journaled, recovers the run elsewhere, and
// checks that the family's stored use is exactly what the journal says
// was charged: the lost reply's settlement is not counted, the
// re-issued call is.
func TestBudgetChargesFollowTheJournal(t *testing.T) {
	if testing.Short() {
		t.Skip("crash tests start processes")
	}
	t.Parallel()
	db := filepath.Join(t.TempDir(), "charges.db")
	killChildAt(t, "charges", "IN_POLICY", db, "", 1)
	a, err := chargesAgent(policy.AllowAll())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rt, st := reopenAhead(t, db, time.Minute, a)
	recoverOne(t, ctx, rt)
	run, err := rt.Await(ctx, "charged")
	if err != nil || run.Status != hitchtype.StatusCompleted {
		t.Fatalf("%+v %v", run, err)
	}
	_, used, _, err := rt.FamilyBudget(ctx, "charged")
	if err != nil {
		t.Fatal(err)
	}
	want := journalCharged(t, rt, st, "charged")
	used.WallTime = 0
	if used != want || want.ModelCalls != 3 || want.ToolCalls != 1 {
		t.Errorf("stored use %+v, the journal says %+v (want 3 model calls, 1 tool call)", used, want)
	}
}
