package hitch_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
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

func delegate(prompt string) scripted.Call {
	return scripted.Call{Name: "researcher", Args: `{"prompt": "` + prompt + `"}`}
}

func child(t *testing.T, spec hitch.Spec) *hitch.Agent {
	t.Helper()
	spec.Name = "researcher"
	spec.Description = "Finds facts."
	return build(t, spec)
}

func TestSubAgentAnswerIsTheCallResult(t *testing.T) {
	t.Parallel()
	kid := child(t, hitch.Spec{Model: scripted.New("kid", scripted.Script{Turns: []scripted.Turn{{Text: "the answer is 42"}}})})
	parentModel := &recorder{Model: scripted.New("boss", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{delegate("find the answer")}},
		{Text: "my researcher says 42"},
	}})}
	boss := build(t, hitch.Spec{Name: "boss", Model: parentModel, SubAgents: []*hitch.Agent{kid}})
	rt, st := setup(t, boss)
	run := runToRest(t, rt, boss, "what is the answer?")
	if run.Status != hitchtype.StatusCompleted || run.Outcome.Answer != "my researcher says 42" {
		t.Fatalf("parent: %s %+v", run.Status, run.Outcome)
	}
	kidRun, err := st.RunGet(context.Background(), run.ID+".t1c1")
	if err != nil || kidRun.ParentID != run.ID || kidRun.RootID != run.ID || kidRun.Depth != 1 || kidRun.Status != hitchtype.StatusCompleted {
		t.Fatalf("child run: %+v %v", kidRun, err)
	}
	if msgs := strings.Join(told(journal(t, rt, run.ID)), "\n"); !strings.Contains(msgs, `call.settled {"call":"t1c1","output":"the answer is 42"}`) {
		t.Errorf("the child's answer is not the call's result:\n%s", msgs)
	}
	fam, err := rt.FamilyUsage(context.Background(), run.ID)
	if err != nil || fam.Runs != 2 || fam.Usage.Generations != 3 || fam.Usage.InputTokens == nil ||
		*fam.Usage.InputTokens != *run.Outcome.Usage.InputTokens+*mustOutcome(t, rt, run.ID+".t1c1").Usage.InputTokens {
		t.Errorf("family usage %+v %v", fam, err)
	}
	tools := parentModel.reqs[0].Tools
	if len(tools) != 1 || tools[0].Name != "researcher" || tools[0].Description != "Finds facts." || !strings.Contains(string(tools[0].Schema), "prompt") {
		t.Errorf("the sub-agent is not declared like a tool: %+v", tools)
	}
}

func TestFailedChildIsADefiniteFailure(t *testing.T) {
	t.Parallel()
	kid := child(t, hitch.Spec{Model: scripted.New("kid", scripted.Script{Turns: []scripted.Turn{{Text: "x", Fail: []scripted.Failure{{Kind: model.KindUnauthorized, Message: "no key"}}}}})})
	boss := build(t, hitch.Spec{Name: "boss", Model: scripted.New("boss", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{delegate("go")}}, {Text: "it failed"},
	}}), SubAgents: []*hitch.Agent{kid}})
	rt, _ := setup(t, boss)
	run := runToRest(t, rt, boss, "go")
	msgs := strings.Join(told(journal(t, rt, run.ID)), "\n")
	if run.Status != hitchtype.StatusCompleted || !strings.Contains(msgs, "call.failed") || !strings.Contains(msgs, "ended failed (model)") || !strings.Contains(msgs, "no key") {
		t.Fatalf("status %s\n%s", run.Status, msgs)
	}
}

func TestDelegationLimits(t *testing.T) {
	t.Parallel()
	grandkid := build(t, hitch.Spec{Name: "grandkid", Model: scripted.New("g", scripted.Script{Turns: []scripted.Turn{{Text: "deep"}}})})
	kid := child(t, hitch.Spec{Model: scripted.New("kid", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{{Name: "grandkid", Args: `{"prompt": "go deeper"}`}}}, {Text: "could not delegate"},
	}}), SubAgents: []*hitch.Agent{grandkid}, Limits: hitch.Limits{MaxDepth: 5}})
	boss := build(t, hitch.Spec{Name: "boss", Model: scripted.New("boss", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{delegate("one"), delegate("two"), {Name: "researcher", Args: `{"task": "x"}`}}},
		{Text: "done"},
	}}), SubAgents: []*hitch.Agent{kid}, Limits: hitch.Limits{MaxChildren: 1}})
	rt, st := setup(t, boss)
	run := runToRest(t, rt, boss, "go")
	msgs := strings.Join(told(journal(t, rt, run.ID)), "\n")
	if run.Status != hitchtype.StatusCompleted || !strings.Contains(msgs, `"call":"t1c2","error":"this run may start at most 1 sub-agent runs`) {
		t.Fatalf("status %s\n%s", run.Status, msgs)
	}
	if _, err := st.RunGet(context.Background(), run.ID+".t1c2"); err == nil {
		t.Error("a child past the limit exists")
	}
	// The boss's depth (1) leaves its child none, whatever the child's
	// own setting.
	kidMsgs := strings.Join(told(journal(t, rt, run.ID+".t1c1")), "\n")
	if !strings.Contains(kidMsgs, "delegation depth limit is reached") {
		t.Errorf("the child delegated past the depth limit:\n%s", kidMsgs)
	}
}

func TestStartingAChildNeedsThePolicy(t *testing.T) {
	t.Parallel()
	approvers := members(t)
	kidPolicy := policy.Rules{{Tools: []string{"charge"}, Verdict: policy.RequireApproval, Requirement: "payments"}}
	var charges atomic.Int64
	charge := tool.MustNew("charge", "Charges.", func(context.Context, struct{}) (string, error) { charges.Add(1); return "ok", nil })
	kid := child(t, hitch.Spec{Model: scripted.New("kid", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{{Name: "charge"}}}, {Text: "charged"},
	}}), Tools: []tool.Tool{charge}, Policy: kidPolicy}) // no approvers: it takes its parent's
	var asked atomic.Int64
	pol := policy.Func(func(_ context.Context, a policy.Action) (policy.Decision, error) {
		if a.Kind == policy.StartAgent {
			asked.Add(1)
			return policy.Decision{Verdict: policy.RequireApproval, Requirement: "payments"}, nil
		}
		return policy.Decision{Verdict: policy.Allow}, nil
	})
	boss := build(t, hitch.Spec{Name: "boss", Model: scripted.New("boss", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{delegate("charge it")}}, {Text: "done"},
	}}), SubAgents: []*hitch.Agent{kid}, Policy: pol, Approvers: approvers})
	rt, st := setup(t, boss)
	ctx := context.Background()
	run := runToRest(t, rt, boss, "go")
	if run.Status != hitchtype.StatusWaiting || asked.Load() != 1 {
		t.Fatalf("status %s, asked %d", run.Status, asked.Load())
	}
	if _, err := st.RunGet(ctx, run.ID+".t1c1"); err == nil {
		t.Fatal("the child exists before its start was approved")
	}
	p := proof(t, approvers, "alice", "a-secret", "payments")
	if err := rt.Approve(ctx, run.ID, "t1c1", p); err != nil {
		t.Fatal(err)
	}
	run, _ = rt.Await(ctx, run.ID)
	// Now the child waits for its own approval, listed under the root.
	pending, _, err := rt.PendingApprovals(ctx, hitch.PendingApprovalsParams{RootID: run.ID})
	if err != nil || len(pending) != 1 || pending[0].RunID != run.ID+".t1c1" || pending[0].Tool != "charge" {
		t.Fatalf("root's pending approvals: %+v %v (root %s)", pending, err, run.Status)
	}
	if err := rt.Approve(ctx, pending[0].RunID, pending[0].Call, p); err != nil {
		t.Fatalf("approve the child's request with the parent's approvers: %v", err)
	}
	run, _ = rt.Await(ctx, run.ID)
	if run.Status != hitchtype.StatusCompleted || charges.Load() != 1 {
		t.Fatalf("status %s, charges %d", run.Status, charges.Load())
	}
}

func TestCancelCascadesAndUncertainChildMakesTheCallUncertain(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	deaf := tool.MustNew("deploy", "Deploys.", func(ctx context.Context, _ struct{}) (string, error) {
		started <- struct{}{}
		<-ctx.Done()
		return "", ctx.Err()
	})
	kid := child(t, hitch.Spec{Model: scripted.New("kid", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{{Name: "deploy"}}}, {Text: "deployed"},
	}}), Tools: []tool.Tool{deaf}})
	boss := build(t, hitch.Spec{Name: "boss", Model: scripted.New("boss", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{delegate("deploy")}}, {Text: "done"},
	}}), SubAgents: []*hitch.Agent{kid}})

	t.Run("cancel the child", func(t *testing.T) {
		rt, _ := setup(t, boss)
		ctx := context.Background()
		res, err := rt.Start(ctx, boss, "go")
		if err != nil {
			t.Fatal(err)
		}
		<-started
		kidRun, err := rt.Cancel(ctx, res.Run.ID+".t1c1")
		if err != nil || kidRun.Status != hitchtype.StatusCancelled || len(kidRun.Outcome.Uncertain) != 1 {
			t.Fatalf("child: %+v %v", kidRun, err)
		}
		run, err := rt.Await(ctx, res.Run.ID)
		if err != nil || run.Status != hitchtype.StatusWaiting {
			t.Fatalf("parent: %s %v", run.Status, err)
		}
		if msgs := strings.Join(told(journal(t, rt, run.ID)), "\n"); !strings.Contains(msgs, `call.uncertain {"call":"t1c1"`) {
			t.Errorf("the parent's call is not uncertain:\n%s", msgs)
		}
	})
	t.Run("cancel the parent", func(t *testing.T) {
		rt, st := setup(t, boss)
		ctx := context.Background()
		res, err := rt.Start(ctx, boss, "go")
		if err != nil {
			t.Fatal(err)
		}
		<-started
		// The parent waits for its child; cancelling it cancels the child.
		for {
			r, _ := st.RunGet(ctx, res.Run.ID)
			if r.Status == hitchtype.StatusWaiting {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		run, err := rt.Cancel(ctx, res.Run.ID)
		if err != nil || run.Status != hitchtype.StatusCancelled {
			t.Fatalf("parent: %+v %v", run, err)
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		kidRun, err := rt.Await(wctx, res.Run.ID+".t1c1")
		if err != nil || kidRun.Status != hitchtype.StatusCancelled {
			t.Fatalf("child after the parent's cancel: %+v %v", kidRun, err)
		}
	})
}

func mustOutcome(t *testing.T, rt *hitch.Runtime, id string) *hitch.Outcome {
	t.Helper()
	r, err := rt.Get(context.Background(), id)
	if err != nil || r.Outcome == nil {
		t.Fatalf("run %s: %+v %v", id, r, err)
	}
	return r.Outcome
}

// TestApprovedDelegationIsAskedAsADelegation: the policy is asked the same
// question at the approval answer as at the decision, so a policy that
// tells a sub-agent start from a tool call lets the approved child start.
func TestApprovedDelegationIsAskedAsADelegation(t *testing.T) {
	t.Parallel()
	approvers := members(t)
	kid := child(t, hitch.Spec{Model: scripted.New("kid", scripted.Script{Turns: []scripted.Turn{{Text: "found"}}})})
	var kinds []policy.ActionKind
	var mu sync.Mutex
	pol := policy.Func(func(_ context.Context, a policy.Action) (policy.Decision, error) {
		mu.Lock()
		kinds = append(kinds, a.Kind)
		mu.Unlock()
		if a.Kind == policy.StartAgent {
			return policy.Decision{Verdict: policy.RequireApproval, Requirement: "payments"}, nil
		}
		return policy.Decision{Verdict: policy.Deny, Reason: "no tools here"}, nil
	})
	boss := build(t, hitch.Spec{Name: "boss", Model: scripted.New("boss", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{delegate("look")}}, {Text: "done"},
	}}), SubAgents: []*hitch.Agent{kid}, Policy: pol, Approvers: approvers})
	rt, st := setup(t, boss)
	ctx := context.Background()
	run := runToRest(t, rt, boss, "go")
	if err := rt.Approve(ctx, run.ID, "t1c1", proof(t, approvers, "alice", "a-secret", "payments")); err != nil {
		t.Fatal(err)
	}
	run, _ = rt.Await(ctx, run.ID)
	if run.Status != hitchtype.StatusCompleted {
		t.Fatalf("status %s", run.Status)
	}
	if k, err := st.RunGet(ctx, run.ID+".t1c1"); err != nil || k.Status != hitchtype.StatusCompleted {
		t.Fatalf("the approved child did not run: %+v %v\n%s", k, err, strings.Join(told(journal(t, rt, run.ID)), "\n"))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(kinds) != 2 || kinds[0] != policy.StartAgent || kinds[1] != policy.StartAgent {
		t.Errorf("the policy was asked %v, want start_agent twice", kinds)
	}
}

// TestParentWaitingOnAChildWritesNothingWhileItWaits: a child parks on an
// approval for a week; its parent, woken meanwhile by every backstop, adds
// nothing to its journal, and completes when the child's request expires
// and the child ends.
func TestParentWaitingOnAChildWritesNothingWhileItWaits(t *testing.T) {
	t.Parallel()
	kid := child(t, hitch.Spec{Model: scripted.New("kid", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{{Name: "charge"}}}, {Text: "gave up"},
	}}), Tools: []tool.Tool{tool.MustNew("charge", "Charges.", func(context.Context, struct{}) (string, error) { return "ok", nil })},
		Policy: payPolicy})
	boss := build(t, hitch.Spec{Name: "boss", Model: scripted.New("boss", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{delegate("charge")}}, {Text: "done"},
	}}), SubAgents: []*hitch.Agent{kid}})
	rt, st, clk := setupAhead(t, boss)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run := runToRest(t, rt, boss, "go")
	if k, _ := st.RunGet(ctx, run.ID+".t1c1"); run.Status != hitchtype.StatusWaiting || k.Status != hitchtype.StatusWaiting {
		t.Fatalf("parent %s, child %s", run.Status, k.Status)
	}
	parked := run.Position
	for range 40 {
		clk.advance(time.Minute)
		if _, err := rt.Recover(ctx); err != nil {
			t.Fatal(err)
		}
		if err := rt.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if r, _ := rt.Get(ctx, run.ID); r.Position != parked || r.Status != hitchtype.StatusWaiting {
		t.Fatalf("the waiting parent wrote %d entries: %s", r.Position-parked, kinds(journal(t, rt, run.ID)[parked:]))
	}
	clk.advance(7 * 24 * time.Hour)
	if _, err := rt.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	run, err := rt.Await(ctx, run.ID)
	if err != nil || run.Status != hitchtype.StatusCompleted {
		t.Fatalf("parent after the child's request expired: %s %v", run.Status, err)
	}
	if n := strings.Count(kinds(journal(t, rt, run.ID)), "run.waiting"); n != 1 {
		t.Errorf("%d run.waiting entries, want 1", n)
	}
}

// waitingKid is a sub-agent that parks on an approval request nobody
// answers, so it outlives whatever its parent does next.
func waitingKid() (*hitch.Agent, error) {
	charge, err := tool.New("charge", "Charges.", func(context.Context, struct{}) (string, error) { return "charged", nil })
	if err != nil {
		return nil, err
	}
	return hitch.Build(hitch.Spec{Name: "researcher", Description: "Finds facts.", Tools: []tool.Tool{charge}, Policy: payPolicy,
		Model: scripted.New("kid", scripted.Script{Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: "charge"}}}, {Text: "done"}}})})
}

// endingBoss delegates to the kid and, in the same reply, makes a call
// that ends the boss as the case says. The policy decides that call once
// parked is closed (the kid has parked), so the kid is at rest when its
// parent ends.
func endingBoss(how string, parked <-chan struct{}) (*hitch.Agent, error) {
	kid, err := waitingKid()
	if err != nil {
		return nil, err
	}
	second, err := tool.New("second", "Answers too much.", func(context.Context, struct{}) (string, error) { return "far too long", nil })
	if err != nil {
		return nil, err
	}
	allow := policy.Func(func(_ context.Context, a policy.Action) (policy.Decision, error) {
		if a.Tool == "second" && parked != nil {
			<-parked
		}
		return policy.Decision{Verdict: policy.Allow}, nil
	})
	spec := hitch.Spec{Name: "boss", SubAgents: []*hitch.Agent{kid}, Tools: []tool.Tool{second}, Policy: allow,
		Model: scripted.New("boss", scripted.Script{Turns: []scripted.Turn{
			{Calls: []scripted.Call{delegate("wait"), {Name: "second", Args: `{}`}}}, {Text: "never"}}})}
	switch how {
	case "policy":
		spec.Policy = policy.Func(func(_ context.Context, a policy.Action) (policy.Decision, error) {
			if a.Tool == "second" {
				<-parked
				return policy.Decision{}, errors.New("policy store unreachable")
			}
			return policy.Decision{Verdict: policy.Allow}, nil
		})
	case "output_too_large":
		spec.Limits.MaxToolResult = 4
	case "tool_calls":
		spec.Budget = &hitch.Budget{ToolCalls: 1}
	default:
		return nil, fmt.Errorf("no case %q", how)
	}
	return hitch.Build(spec)
}

// TestParentsEndCancelsItsChildren: however a parent ends, its live
// children end cancelled.
func TestParentsEndCancelsItsChildren(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		how    string
		status hitchtype.Status
	}{
		{"policy", hitchtype.StatusFailed},
		{"output_too_large", hitchtype.StatusFailed},
		{"tool_calls", hitchtype.StatusBudgetExhausted},
	} {
		t.Run(tc.how, func(t *testing.T) {
			t.Parallel()
			parked, onEvent := kidParked()
			boss, err := endingBoss(tc.how, parked)
			if err != nil {
				t.Fatal(err)
			}
			rt, st := hitchtest.New(t, hitch.Config{Agents: []*hitch.Agent{boss}, OnEvent: onEvent})
			run := runToRest(t, rt, boss, "go")
			if run.Status != tc.status || run.Outcome.Reason != tc.how {
				t.Fatalf("parent: %s %+v", run.Status, run.Outcome)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			kid, err := rt.Await(ctx, run.ID+".t1c1")
			if err != nil || kid.Status != hitchtype.StatusCancelled {
				r, _ := st.RunGet(ctx, run.ID+".t1c1")
				t.Fatalf("child after the parent ended %s: %s %v\n%+v\n%s", tc.status, kid.Status, err, r, kinds(journal(t, rt, r.ID)))
			}
		})
	}
}

// kidParked returns a channel closed once a sub-agent run has parked, and
// the observer that closes it.
func kidParked() (<-chan struct{}, func(hitch.Event)) {
	parked := make(chan struct{})
	var once sync.Once
	return parked, func(ev hitch.Event) {
		for _, e := range ev.Entries {
			if e.Kind == hitchtype.KindRunWaiting && strings.HasSuffix(ev.RunID, ".t1c1") {
				once.Do(func() { close(parked) })
			}
		}
	}
}

// endedChild starts a boss whose end is followed at once by the death of
// its process: the process stops right after the terminal append.
func endedChild(db string) int {
	ctx := context.Background()
	parked, onEvent := kidParked()
	boss, err := endingBoss("policy", parked)
	if err != nil {
		return childFail(err)
	}
	return childStart(ctx, db, hitch.Config{LeaseTTL: crashLeaseTTL,
		OnEvent: func(ev hitch.Event) {
			onEvent(ev)
			for _, e := range ev.Entries {
				if e.Kind == hitchtype.KindRunEnded && ev.RunID == "boss" {
					fmt.Println("ENDED")
					select {}
				}
			}
		}}, boss, "go", hitch.WithID("boss"))
}

// TestCrashAfterTheParentsEnd: the process dies right after the parent's
// terminal append; its child still ends cancelled, recovered elsewhere.
func TestCrashAfterTheParentsEnd(t *testing.T) {
	db, _ := crashTest(t, "ended", "ENDED", "")
	boss, err := endingBoss("policy", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// This store's clock runs a minute ahead, past the dead process's leases.
	rt, st := reopenAhead(t, db, time.Minute, boss)
	if r, err := st.RunGet(ctx, "boss"); err != nil || r.Status != hitchtype.StatusFailed {
		t.Fatalf("parent: %+v %v", r, err)
	}
	if _, err := rt.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	kid, err := rt.Await(ctx, "boss.t1c1")
	if err != nil || kid.Status != hitchtype.StatusCancelled {
		kids, _ := st.RunList(ctx, store.RunListParams{ParentID: "boss"})
		t.Fatalf("child after its parent ended and the process died: %s %v (%+v)", kid.Status, err, kids)
	}
}
