package hitch_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/hook"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/tool"
)

// hooks lets each test set only the hook it needs.
type hooks struct {
	hook.Base
	preGenerate func(hook.Generate) (string, error)
	preTool     func(hook.Call) (hook.ToolVerdict, error)
	postTool    func(hook.Call, hook.Result) (hook.Result, error)
	postTurn    func(hook.Answer) (hook.Verdict, error)
}

func (h hooks) PreGenerate(ctx context.Context, g hook.Generate) (string, error) {
	if h.preGenerate == nil {
		return h.Base.PreGenerate(ctx, g)
	}
	return h.preGenerate(g)
}

func (h hooks) PreTool(ctx context.Context, c hook.Call) (hook.ToolVerdict, error) {
	if h.preTool == nil {
		return h.Base.PreTool(ctx, c)
	}
	return h.preTool(c)
}

func (h hooks) PostTool(ctx context.Context, c hook.Call, r hook.Result) (hook.Result, error) {
	if h.postTool == nil {
		return h.Base.PostTool(ctx, c, r)
	}
	return h.postTool(c, r)
}

func (h hooks) PostTurn(ctx context.Context, a hook.Answer) (hook.Verdict, error) {
	if h.postTurn == nil {
		return h.Base.PostTurn(ctx, a)
	}
	return h.postTurn(a)
}

// echo returns its input, so a test sees what the body got.
type echoArgs struct {
	Text string `json:"text"`
}

func echoTool(ran *atomic.Int64) tool.Tool {
	return tool.MustNew("echo", "Echoes.", func(_ context.Context, in echoArgs) (string, error) {
		ran.Add(1)
		return "echo: " + in.Text, nil
	})
}

func echoScript() *scripted.Model {
	return scripted.New("echo", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{{Name: "echo", Args: `{"text": "secret 1234"}`}}},
		{Text: "first answer"},
		{Text: "second answer"},
	}})
}

func TestPreGenerateAddsJournaledInstructions(t *testing.T) {
	t.Parallel()
	var ran atomic.Int64
	m := &recorder{Model: echoScript()}
	h := hooks{preGenerate: func(g hook.Generate) (string, error) { return "Today is turn " + string(rune('0'+g.Turn)) + ".", nil }}
	a := build(t, hitch.Spec{Model: m, Instructions: "Be brief.", Tools: []tool.Tool{echoTool(&ran)}, Hooks: h})
	rt, _ := setup(t, a)
	run := runToRest(t, rt, a, "go")
	if run.Status != hitchtype.StatusCompleted || m.reqs[1].Instructions != "Be brief.\n\nToday is turn 2." {
		t.Fatalf("status %s, instructions %q", run.Status, m.reqs[1].Instructions)
	}
	if n := strings.Count(kinds(journal(t, rt, run.ID)), "context"); n != 2 {
		t.Errorf("%d context entries, want one per changed turn (2)", n)
	}

	failing := build(t, hitch.Spec{Name: "failing", Model: echoScript(), Tools: []tool.Tool{echoTool(&ran)},
		Hooks: hooks{preGenerate: func(hook.Generate) (string, error) { return "", errors.New("context service down") }}})
	rt2, _ := setup(t, failing)
	run = runToRest(t, rt2, failing, "go")
	if run.Status != hitchtype.StatusFailed || run.Outcome.Reason != "hook" || run.Outcome.Attempts != 0 {
		t.Fatalf("failing pre-generate: %s %+v", run.Status, run.Outcome)
	}
}

func TestPreToolDeniesRewritesAndHolds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		verdict hook.ToolVerdict
		err     error
		delay   time.Duration
		want    string // in what the model was told
		ran     int64
	}{
		{"deny", hook.ToolVerdict{Action: hook.Deny, Reason: "no echoes today"}, nil, 0, `"action":"deny","reason":"no echoes today"`, 0},
		{"rewrite", hook.ToolVerdict{Action: hook.Run, Arguments: json.RawMessage(`{"text":"redacted"}`)}, nil, 0, "echo: redacted", 1},
		{"error fails closed", hook.ToolVerdict{}, errors.New("boom"), 0, "the pre-tool hook failed", 0},
		{"timeout fails closed", hook.ToolVerdict{Action: hook.Run}, nil, 2 * time.Second, "no answer within", 0},
		{"bad rewrite", hook.ToolVerdict{Action: hook.Run, Arguments: json.RawMessage(`{bad`)}, nil, 0, "invalid JSON", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var ran atomic.Int64
			slept := make(chan struct{}, 1)
			if tc.delay > 0 {
				t.Cleanup(func() { // the hook outlives its bound; the leak check comes later
					select {
					case <-slept:
					case <-time.After(2 * tc.delay):
					}
				})
			}
			h := hooks{preTool: func(hook.Call) (hook.ToolVerdict, error) {
				time.Sleep(tc.delay) // ignores its context on purpose
				select {
				case slept <- struct{}{}:
				default:
				}
				return tc.verdict, tc.err
			}}
			// Every hook call of the run (the no-op pre-generate ones too) has
			// this bound, so only the case about it makes it short: on a busy
			// machine a 50 ms bound failed the others' runs before any tool.
			limit := 10 * time.Second
			if tc.delay > 0 {
				limit = tc.delay / 4
			}
			a := build(t, hitch.Spec{Model: echoScript(), Tools: []tool.Tool{echoTool(&ran)}, Hooks: h, Limits: hitch.Limits{HookTimeout: limit}})
			rt, _ := setup(t, a)
			run := runToRest(t, rt, a, "go")
			msgs := strings.Join(told(journal(t, rt, run.ID)), "\n")
			if run.Status != hitchtype.StatusCompleted || !strings.Contains(msgs, tc.want) || ran.Load() != tc.ran {
				t.Fatalf("status %s, body ran %d\n%s", run.Status, ran.Load(), msgs)
			}
		})
	}

	t.Run("hold", func(t *testing.T) {
		t.Parallel()
		var ran, asked atomic.Int64
		approvers := members(t)
		h := hooks{preTool: func(hook.Call) (hook.ToolVerdict, error) {
			asked.Add(1)
			return hook.ToolVerdict{Action: hook.Hold, Requirement: "payments", Reason: "looks like a card number"}, nil
		}}
		a := build(t, hitch.Spec{Model: echoScript(), Tools: []tool.Tool{echoTool(&ran)}, Hooks: h, Approvers: approvers})
		rt, _ := setup(t, a)
		ctx := context.Background()
		run := runToRest(t, rt, a, "go")
		pending, _, _ := rt.PendingApprovals(ctx, hitch.PendingApprovalsParams{RootID: run.ID})
		if run.Status != hitchtype.StatusWaiting || len(pending) != 1 || !strings.Contains(pending[0].Reason, "card number") {
			t.Fatalf("status %s, pending %+v", run.Status, pending)
		}
		if err := rt.Approve(ctx, run.ID, "t1c1", proof(t, approvers, "alice", "a-secret", "payments")); err != nil {
			t.Fatal(err)
		}
		run, _ = rt.Await(ctx, run.ID)
		if run.Status != hitchtype.StatusCompleted || ran.Load() != 1 || asked.Load() != 1 {
			t.Fatalf("status %s, ran %d, hook asked %d times (want once)", run.Status, ran.Load(), asked.Load())
		}
	})
}

func TestPostToolRewritesAndFailsOpen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		fn   func(hook.Call, hook.Result) (hook.Result, error)
		want string
	}{
		{"rewrite", func(_ hook.Call, r hook.Result) (hook.Result, error) {
			return hook.Result{Output: strings.ReplaceAll(r.Output, "1234", "****")}, nil
		}, `"output":"echo: secret ****"`},
		{"error keeps the result", func(hook.Call, hook.Result) (hook.Result, error) { return hook.Result{}, errors.New("boom") },
			`"output":"echo: secret 1234"`},
		{"turn into a failure", func(hook.Call, hook.Result) (hook.Result, error) {
			return hook.Result{Output: "withheld", IsError: true}, nil
		}, `call.failed {"call":"t1c1","error":"withheld"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var ran atomic.Int64
			a := build(t, hitch.Spec{Model: echoScript(), Tools: []tool.Tool{echoTool(&ran)}, Hooks: hooks{postTool: tc.fn}})
			rt, _ := setup(t, a)
			run := runToRest(t, rt, a, "go")
			if msgs := strings.Join(told(journal(t, rt, run.ID)), "\n"); run.Status != hitchtype.StatusCompleted || !strings.Contains(msgs, tc.want) {
				t.Fatalf("status %s\n%s", run.Status, msgs)
			}
		})
	}
}

func TestPostTurnValidators(t *testing.T) {
	t.Parallel()
	var ran atomic.Int64
	seen := []string{}
	refuseFirst := hooks{postTurn: func(a hook.Answer) (hook.Verdict, error) {
		seen = append(seen, a.Text)
		if a.Text == "first answer" {
			return hook.Verdict{Reason: "cite a source"}, nil
		}
		return hook.Verdict{Valid: true}, nil
	}}
	a := build(t, hitch.Spec{Model: echoScript(), Tools: []tool.Tool{echoTool(&ran)}, Hooks: refuseFirst})
	rt, _ := setup(t, a)
	run := runToRest(t, rt, a, "go")
	if run.Status != hitchtype.StatusCompleted || run.Outcome.Answer != "second answer" || len(seen) != 2 {
		t.Fatalf("status %s, outcome %+v, seen %v", run.Status, run.Outcome, seen)
	}
	if !strings.Contains(kinds(journal(t, rt, run.ID)), "answer.refused") {
		t.Error("the refusal is not journaled")
	}

	broken := hooks{postTurn: func(hook.Answer) (hook.Verdict, error) { return hook.Verdict{}, errors.New("validator down") }}
	b := build(t, hitch.Spec{Name: "strict", Model: echoScript(), Tools: []tool.Tool{echoTool(&ran)}, Hooks: broken})
	rt2, _ := setup(t, b)
	run = runToRest(t, rt2, b, "go")
	if run.Status != hitchtype.StatusAnswerInvalid || !strings.Contains(run.Outcome.Error, "could not be validated") || strings.Contains(run.Outcome.Error, "validator down") {
		t.Fatalf("broken validator: %s %+v", run.Status, run.Outcome)
	}
}
