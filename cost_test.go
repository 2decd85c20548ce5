package hitch_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/hitchtest"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/sessions"
	"github.com/hitch-dev/hitch/tool"
)

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
