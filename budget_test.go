package hitch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"math"
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
	"github.com/hitch-dev/hitch/sessions"
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
	db, _ := crashTest(t, "charges", "IN_POLICY", "")
	a, err := chargesAgent(policy.AllowAll())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rt, st, _ := recoverAhead(t, ctx, db, "charged", a)
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

var costPrices = model.Prices{
	"scripted/boss": {Input: 3, Output: 15, CachedInput: 3},
	"scripted/kid":  {Input: 1, Output: 5, CachedInput: 1},
	"scripted/chat": {Input: 2, Output: 4, CachedInput: 2},
}

func openPriced(t *testing.T, agents ...*hitch.Agent) *hitch.Runtime {
	t.Helper()
	rt, _ := hitchtest.New(t, hitch.Config{Agents: agents, Prices: costPrices})
	return rt
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// TestFamilyCostSumsEveryRun: a family's cost is its runs' costs summed,
// the sub-agent's included; a model without a price makes it not priced.
func TestFamilyCostSumsEveryRun(t *testing.T) {
	t.Parallel()
	for _, priced := range []bool{true, false} {
		kidName := "kid"
		if !priced {
			kidName = "unpriced"
		}
		kid := child(t, hitch.Spec{Model: scripted.New(kidName, scripted.Script{Turns: []scripted.Turn{{Text: "42"}}})})
		boss := build(t, hitch.Spec{Name: "boss", Model: scripted.New("boss", scripted.Script{Turns: []scripted.Turn{
			{Calls: []scripted.Call{delegate("find it")}}, {Text: "it is 42"},
		}}), SubAgents: []*hitch.Agent{kid}})
		rt := openPriced(t, boss)
		run := runToRest(t, rt, boss, "what is it?")
		if run.Status != hitchtype.StatusCompleted {
			t.Fatalf("run: %+v", run)
		}
		c, err := rt.FamilyCost(context.Background(), run.ID)
		if err != nil || c.Runs != 2 || c.Live != 0 {
			t.Fatalf("priced %v: family cost %+v %v", priced, c, err)
		}
		if !priced {
			if c.USD != nil {
				t.Errorf("a family with an unpriced model costs %v, want not priced", *c.USD)
			}
			continue
		}
		want := *run.Outcome.CostUSD + *mustOutcome(t, rt, run.ID+".t1c1").CostUSD
		if c.USD == nil || *c.USD <= *run.Outcome.CostUSD || !near(*c.USD, want) {
			t.Errorf("family cost %v, want %v", c.USD, want)
		}
	}
}

// TestFamilyCostOfALiveRun: a run parked mid-way costs what its replies
// cost so far, each priced as it came.
func TestFamilyCostOfALiveRun(t *testing.T) {
	t.Parallel()
	charge := tool.MustNew("charge", "Charges.", func(context.Context, struct{}) (string, error) { return "ok", nil })
	a := build(t, hitch.Spec{Name: "boss", Model: scripted.New("boss", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{{Name: "charge"}}}, {Text: "charged"},
	}}), Tools: []tool.Tool{charge}, Policy: policy.Rules{{Tools: []string{"charge"}, Verdict: policy.RequireApproval, Requirement: "payments"}}})
	rt := openPriced(t, a)
	run := runToRest(t, rt, a, "charge it")
	if run.Status != hitchtype.StatusWaiting {
		t.Fatalf("run: %+v", run)
	}
	var want float64
	for _, e := range journal(t, rt, run.ID) {
		if e.Kind != hitchtype.KindModelReply {
			continue
		}
		var r hitchtype.ModelReply
		if err := json.Unmarshal(e.Data, &r); err != nil {
			t.Fatal(err)
		}
		usd, ok := costPrices.Cost("scripted/boss", r.Reply.Usage)
		if !ok || r.CostUSD == nil || !near(*r.CostUSD, usd) {
			t.Fatalf("reply priced %v, want %v", r.CostUSD, usd)
		}
		want += usd
	}
	c, err := rt.FamilyCost(context.Background(), run.ID)
	if err != nil || c.Runs != 1 || c.Live != 1 || c.USD == nil || want == 0 || !near(*c.USD, want) {
		t.Fatalf("family cost %+v %v, want $%v with one live run", c, err, want)
	}
}

// TestSessionCostSumsItsSubmissions: a session's cost is the sum of its
// submissions' families.
func TestSessionCostSumsItsSubmissions(t *testing.T) {
	t.Parallel()
	a := build(t, hitch.Spec{Name: "chat", Model: scripted.New("chat", scripted.Script{Turns: []scripted.Turn{{Text: "noted"}}, Repeat: true})})
	rt := openPriced(t, a)
	s := openSession(t, rt, a, "costly")
	send(t, rt, s.ID, "one", sessions.SendOptions{})
	send(t, rt, s.ID, "two", sessions.SendOptions{})
	st := awaitSession(t, rt, s.ID)
	if len(st.Submissions) != 2 || st.CostUSD == nil {
		t.Fatalf("status: %+v", st)
	}
	c, err := rt.Sessions().Cost(context.Background(), s.ID)
	if err != nil || c.Runs != 2 || c.Live != 0 || c.USD == nil || *c.USD == 0 || !near(*c.USD, *st.CostUSD) {
		t.Fatalf("session cost %+v %v, want $%v", c, err, *st.CostUSD)
	}
}

// TestLatestContextRequests: the latest requests, read backwards from the
// journal's end across pages, are the tail of all of them, each paired
// with its reply.
func TestLatestContextRequests(t *testing.T) {
	t.Parallel()
	a := build(t, hitch.Spec{Name: "long", Model: scripted.New("long", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{{Name: "nothing"}}},
	}, Repeat: true}), Limits: hitch.Limits{ModelAttempts: 400}})
	rt := openPriced(t, a)
	run := runToRest(t, rt, a, "go on and on")
	if run.Status != hitchtype.StatusCompleted || run.Position < 1100 {
		t.Fatalf("run: %s at %d entries, want a completed journal of more than one page", run.Status, run.Position)
	}
	ctx := context.Background()
	all, err := rt.ContextRequests(ctx, run.ID)
	if err != nil || len(all) != 400 {
		t.Fatalf("%d requests, %v; want 400", len(all), err)
	}
	for _, n := range []int{1, 2, 350, 400, 1000} {
		got, more, err := rt.LatestContextRequests(ctx, run.ID, n)
		want := all[max(0, len(all)-n):]
		if err != nil || more != (n < len(all)) || len(got) != len(want) {
			t.Fatalf("n %d: %d requests, more %v, %v; want %d", n, len(got), more, err, len(want))
		}
		for i := range got {
			if got[i].Attempt != want[i].Attempt || got[i].Result != "reply" || got[i].Usage == nil || got[i].Context == nil ||
				*got[i].Context != *want[i].Context {
				t.Fatalf("n %d: request %d is %+v, want %+v", n, i, got[i], want[i])
			}
		}
	}
	if _, _, err := rt.LatestContextRequests(ctx, run.ID, 0); err == nil {
		t.Error("n 0 was accepted")
	}
}

// stallModel answers its first request with a tool call and 10+2 tokens.
// Its second generation signals started, waits for cancellation, and then
// either replies with 7+3 tokens (late) or never stops (deaf, until the
// test ends).
type stallModel struct {
	late    bool
	started chan struct{}
	release chan struct{}
}

func (m *stallModel) Name() string { return "scripted/stall" }

func (m *stallModel) Generate(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		if len(req.Messages) == 1 {
			yield(&model.Chunk{Reply: &model.Reply{ToolCalls: []model.ToolCall{{ID: "c1", Name: "add", Arguments: `{"a":1,"b":2}`}},
				Usage: &model.Usage{InputTokens: model.Int64(10), OutputTokens: model.Int64(2), CachedInputTokens: model.Int64(0)}}}, nil)
			return
		}
		m.started <- struct{}{}
		<-ctx.Done()
		if !m.late {
			<-m.release
			return
		}
		yield(&model.Chunk{Reply: &model.Reply{Text: "too late",
			Usage: &model.Usage{InputTokens: model.Int64(7), OutputTokens: model.Int64(3), CachedInputTokens: model.Int64(0)}}}, nil)
	}
}

// TestUsageAtCancellation: a reply that arrives while the run is being
// cancelled is counted, and a generation still in flight at the end is
// counted as unreported (null totals), never left out.
func TestUsageAtCancellation(t *testing.T) {
	t.Parallel()
	for _, late := range []bool{true, false} {
		m := &stallModel{late: late, started: make(chan struct{}, 1), release: make(chan struct{})}
		a := build(t, hitch.Spec{Model: m, Tools: []tool.Tool{addTool(t, nil)}})
		rt, _ := setup(t, a)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		res, err := rt.Start(ctx, a, "go")
		if err != nil {
			t.Fatal(err)
		}
		<-m.started
		run, err := rt.Cancel(ctx, res.Run.ID)
		close(m.release)
		cancel()
		if err != nil || run.Status != hitchtype.StatusCancelled {
			t.Fatalf("late %v: %+v %v", late, run, err)
		}
		u := run.Outcome.Usage
		if u.Generations != 2 {
			t.Errorf("late %v: %d generations, want 2", late, u.Generations)
		}
		switch {
		case late && (u.InputTokens == nil || *u.InputTokens != 17 || u.OutputTokens == nil || *u.OutputTokens != 5):
			t.Errorf("late reply not counted: %+v", u)
		case !late && (u.InputTokens != nil || u.OutputTokens != nil):
			t.Errorf("in-flight generation not counted as unreported: in %v out %v", ptr(u.InputTokens), ptr(u.OutputTokens))
		}
	}
}

func ptr(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}
