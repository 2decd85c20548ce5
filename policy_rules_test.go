package hitch_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/tool"
)

// Rule conditions decide on the call's arguments and on the run the engine
// describes, both when the call is planned and again at approval time.
func TestPolicyConditionsInARun(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var paid []float64
	type payment struct {
		AmountUSD float64 `json:"amount_usd"`
	}
	pay := tool.MustNew("pay", "Pays an amount.", func(_ context.Context, p payment) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		paid = append(paid, p.AmountUSD)
		return "paid", nil
	})
	m := scripted.New("payer", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{
			{Name: "pay", Args: `{"amount_usd": 20}`},
			{Name: "pay", Args: `{"amount_usd": 500}`},
			{Name: "pay", Args: `{"amount_usd": 5000}`},
		}},
		{Text: "done"},
	}})
	rules, err := policy.Rules{
		{Name: "hard cap", Tools: []string{"pay"}, When: `requirement == "payments" && args.amount_usd > 1000`, Verdict: policy.Deny, Reason: "over the hard cap"},
		{Tools: []string{"pay"}, When: `args.amount_usd > 100 && agent.name == "payer" && agent.version == 2 && run.depth == 0 && run.root_id == run.id`,
			Verdict: policy.RequireApproval, Requirement: "payments", Reason: "a large payment"},
		{Tools: []string{"pay"}, When: `args.amount_usd <= 100`, Verdict: policy.Allow},
	}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	approvers := members(t)
	a := build(t, hitch.Spec{Name: "payer", Version: 2, Model: m, Tools: []tool.Tool{pay}, Policy: rules, Approvers: approvers})
	rt, _ := setup(t, a)
	ctx := context.Background()
	run := runToRest(t, rt, a, "pay them")
	if run.Status != hitchtype.StatusWaiting {
		t.Fatalf("status %s, outcome %+v", run.Status, run.Outcome)
	}
	// The engine asks for one approval at a time, in the reply's order.
	for _, want := range []string{"t1c2", "t1c3"} {
		if run.Status != hitchtype.StatusWaiting {
			t.Fatalf("status %s, outcome %+v; want waiting for %s", run.Status, run.Outcome, want)
		}
		pending, _, err := rt.PendingApprovals(ctx, hitch.PendingApprovalsParams{RootID: run.ID})
		if err != nil || len(pending) != 1 || pending[0].Call != want || pending[0].Reason != "a large payment" {
			t.Fatalf("pending = %+v, %v; want %s", pending, err, want)
		}
		err = rt.Approve(ctx, run.ID, want, proof(t, approvers, "alice", "a-secret", "payments"))
		switch {
		case want == "t1c3" && !errors.Is(err, hitch.ErrDeniedAtAnswer):
			// At approval time requirement is "payments": the cap applies.
			t.Fatalf("approve %s: %v, want ErrDeniedAtAnswer", want, err)
		case want != "t1c3" && err != nil:
			t.Fatal(err)
		}
		if run, err = rt.Await(ctx, run.ID); err != nil {
			t.Fatal(err)
		}
	}
	if run.Status != hitchtype.StatusCompleted {
		t.Fatalf("after approvals: %+v", run)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paid) != 2 || paid[0]+paid[1] != 520 {
		t.Errorf("paid %v, want 20 and 500 (5000 is over the cap even when approved)", paid)
	}
	if msgs := strings.Join(told(journal(t, rt, run.ID)), "\n"); !strings.Contains(msgs, "over the hard cap") {
		t.Errorf("the model was not told of the cap; it was told:\n%s", msgs)
	}
}
