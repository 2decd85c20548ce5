package hitch_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/hitchtest"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/tool"
)

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
	if testing.Short() {
		t.Skip("crash tests start processes")
	}
	t.Parallel()
	db := filepath.Join(t.TempDir(), "ended.db")
	killChildAt(t, "ended", "ENDED", db, "", 1)
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
