package hitch_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
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

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

func addTool(t *testing.T, calls *atomic.Int64) tool.Tool {
	t.Helper()
	return tool.MustNew("add", "Adds two integers.", func(_ context.Context, in addArgs) (int, error) {
		if calls != nil {
			calls.Add(1)
		}
		return in.A + in.B, nil
	})
}

// setup opens a fresh store and a runtime for the given agents.
func setup(t *testing.T, agents ...*hitch.Agent) (*hitch.Runtime, store.Store) {
	t.Helper()
	return setupAt(t, filepath.Join(t.TempDir(), "hitch.db"), agents...)
}

// setupAt opens the store at path (a fresh file or one another process
// left) and a runtime for the given agents, closed when the test ends.
func setupAt(t *testing.T, path string, agents ...*hitch.Agent) (*hitch.Runtime, store.Store) {
	t.Helper()
	st := hitchtest.OpenStore(t, path)
	return openOn(t, st, agents...), st
}

func build(t *testing.T, spec hitch.Spec) *hitch.Agent {
	t.Helper()
	if spec.Name == "" {
		spec.Name = "tester"
	}
	if spec.Policy == nil {
		spec.Policy = policy.AllowAll()
	}
	spec.Limits.RetryDelay = or(spec.Limits.RetryDelay, time.Millisecond)
	a, err := hitch.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func or[T comparable](v, d T) T {
	var z T
	if v == z {
		return d
	}
	return v
}

// runToRest starts a run and waits for it to end or park.
func runToRest(t *testing.T, rt *hitch.Runtime, a *hitch.Agent, input string, opts ...hitch.StartOption) hitch.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := rt.Start(ctx, a, input, opts...)
	if err != nil {
		t.Fatal(err)
	}
	run, err := rt.Await(ctx, res.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func journal(t *testing.T, rt *hitch.Runtime, id string) []store.Entry {
	t.Helper()
	es, err := rt.Journal(context.Background(), id, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func kinds(es []store.Entry) string {
	k := make([]string, len(es))
	for i, e := range es {
		k[i] = e.Kind
	}
	return strings.Join(k, " ")
}

// toolMessages returns what the model was told about each call, from the
// journal: rejections, decisions and results, in order.
func told(es []store.Entry) []string {
	var out []string
	for _, e := range es {
		switch e.Kind {
		case "call.rejected", "call.failed", "call.settled", "call.decided", "call.uncertain", "call.reconciled", "call.hooked":
			out = append(out, e.Kind+" "+string(e.Data))
		}
	}
	return out
}

func TestRunCompletesWithToolCalls(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	m := scripted.New("sum", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{{Name: "add", Args: `{"a":1,"b":2}`}}},
		{Calls: []scripted.Call{{Name: "add", Args: `{"a":3,"b":4}`}, {Name: "add", Args: `{"a":5,"b":6}`}}},
		{Text: "The sums are 3, 7 and 11."},
	}})
	a := build(t, hitch.Spec{Model: m, Tools: []tool.Tool{addTool(t, &calls)}})
	rt, _ := setup(t, a)
	run := runToRest(t, rt, a, "add things")
	if run.Status != hitchtype.StatusCompleted || run.Outcome == nil || run.Outcome.Answer != "The sums are 3, 7 and 11." {
		t.Fatalf("run = %+v, outcome %+v", run, run.Outcome)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("tool ran %d times, want 3", n)
	}
	es := journal(t, rt, run.ID)
	want := "run.started context model.attempt model.reply call.decided call.started call.settled model.attempt model.reply " +
		"call.decided call.started call.decided call.started call.settled call.settled model.attempt model.reply run.ended"
	got := kinds(es)
	// The two bodies of turn 2 may start and settle in either interleaving.
	if strings.Count(got, "call.settled") != 3 || !strings.HasPrefix(got, "run.started context model.attempt model.reply call.decided call.started") || !strings.HasSuffix(got, "model.attempt model.reply run.ended") {
		t.Errorf("journal kinds:\n got %s\nwant %s", got, want)
	}
	if run.Outcome.Turns != 3 || run.Outcome.Attempts != 3 || run.Outcome.Usage.InputTokens == nil {
		t.Errorf("outcome = %+v", run.Outcome)
	}
}

func TestModelSeesDenialsAndBadCalls(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	m := scripted.New("bad", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{
			{Name: "nope", Args: `{}`},
			{Name: "add", Args: `{"a":1,`},
			{Name: "add", Args: `{"a":"one","b":2}`},
			{Name: "secret", Args: `{}`},
		}},
		{Calls: []scripted.Call{{Name: "add", Args: `{"a":1,"b":2}`}}},
		{Text: "done"},
	}})
	secret := tool.MustNew("secret", "Never allowed.", func(context.Context, struct{}) (string, error) {
		t.Error("a denied tool ran")
		return "", nil
	})
	pol := policy.Rules{{Tools: []string{"secret"}, Verdict: policy.Deny, Reason: "secrets are off limits"}, {Tools: []string{"*"}, Verdict: policy.Allow}}
	a := build(t, hitch.Spec{Model: m, Tools: []tool.Tool{addTool(t, &calls), secret}, Policy: pol})
	rt, _ := setup(t, a)
	run := runToRest(t, rt, a, "try everything")
	if run.Status != hitchtype.StatusCompleted {
		t.Fatalf("status %s, outcome %+v", run.Status, run.Outcome)
	}
	msgs := strings.Join(told(journal(t, rt, run.ID)), "\n")
	for _, want := range []string{`there is no tool named \"nope\"`, "not valid JSON", "invalid arguments for add", "secrets are off limits"} {
		if !strings.Contains(msgs, want) {
			t.Errorf("the model was not told %q; it was told:\n%s", want, msgs)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("add ran %d times, want 1 (the bad calls must not run)", n)
	}
}

func TestModelKeepsFailing(t *testing.T) {
	t.Parallel()
	fail := scripted.Failure{Kind: model.KindOverloaded, Message: "try later"}
	m := scripted.New("flaky", scripted.Script{Turns: []scripted.Turn{{Text: "never", Fail: []scripted.Failure{fail, fail, fail, fail}}}})
	a := build(t, hitch.Spec{Model: m, Limits: hitch.Limits{ModelAttempts: 3}})
	rt, _ := setup(t, a)
	run := runToRest(t, rt, a, "hello")
	if run.Status != hitchtype.StatusFailed || run.Outcome.Reason != "model_attempts" || !strings.Contains(run.Outcome.Error, "try later") {
		t.Fatalf("status %s, outcome %+v", run.Status, run.Outcome)
	}
	if run.Outcome.Attempts != 3 {
		t.Errorf("attempts = %d, want 3", run.Outcome.Attempts)
	}
}

func TestModelRecoversAfterRetries(t *testing.T) {
	t.Parallel()
	m := scripted.New("flaky", scripted.Script{Turns: []scripted.Turn{{Text: "ok", Fail: []scripted.Failure{
		{Kind: model.KindRateLimited, RetryAfter: 5 * time.Millisecond}, {Kind: model.KindUnreachable}}}}})
	a := build(t, hitch.Spec{Model: m})
	rt, _ := setup(t, a)
	run := runToRest(t, rt, a, "hello")
	if run.Status != hitchtype.StatusCompleted || run.Outcome.Attempts != 3 {
		t.Fatalf("status %s, outcome %+v", run.Status, run.Outcome)
	}
	// Two attempts failed before usage came back: the totals are unknown.
	if u := run.Outcome.Usage; u.InputTokens != nil || u.Generations != 3 {
		t.Errorf("usage = %+v, want null counters over 3 generations", u)
	}
}

func TestPermanentModelErrorFailsAtOnce(t *testing.T) {
	t.Parallel()
	m := scripted.New("bad", scripted.Script{Turns: []scripted.Turn{{Text: "x", Fail: []scripted.Failure{{Kind: model.KindUnauthorized, Message: "bad key"}}}}})
	a := build(t, hitch.Spec{Model: m})
	rt, _ := setup(t, a)
	run := runToRest(t, rt, a, "hello")
	if run.Status != hitchtype.StatusFailed || run.Outcome.Attempts != 1 || !strings.Contains(run.Outcome.Error, "bad key") {
		t.Fatalf("status %s, outcome %+v", run.Status, run.Outcome)
	}
}

func TestStartIsIdempotent(t *testing.T) {
	t.Parallel()
	m := scripted.New("one", scripted.Script{Turns: []scripted.Turn{{Text: "hi"}}})
	a := build(t, hitch.Spec{Model: m})
	rt, _ := setup(t, a)
	ctx := context.Background()
	first := runToRest(t, rt, a, "hello", hitch.WithID("job-1"))
	again, err := rt.Start(ctx, a, "hello", hitch.WithID("job-1"))
	if err != nil {
		t.Fatal(err)
	}
	if again.Created || !again.SameInput || again.Run.ID != first.ID {
		t.Errorf("second start = %+v", again)
	}
	other, err := rt.Start(ctx, a, "something else", hitch.WithID("job-1"))
	if err != nil {
		t.Fatal(err)
	}
	if other.Created || other.SameInput {
		t.Errorf("start with other input = %+v", other)
	}
	if n := len(journal(t, rt, "job-1")); int64(n) != first.Position {
		t.Errorf("journal grew from %d to %d entries", first.Position, n)
	}
}

func TestOutputTooLarge(t *testing.T) {
	t.Parallel()
	big := tool.MustNew("big", "Returns a lot.", func(context.Context, struct{}) (string, error) {
		return strings.Repeat("x", 2000), nil
	})
	m := scripted.New("big", scripted.Script{Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: "big"}}}, {Text: "unreachable"}}})
	a := build(t, hitch.Spec{Model: m, Tools: []tool.Tool{big}, Limits: hitch.Limits{MaxToolResult: 1000}})
	rt, _ := setup(t, a)
	run := runToRest(t, rt, a, "go")
	if run.Status != hitchtype.StatusFailed || run.Outcome.Reason != "output_too_large" || !strings.Contains(run.Outcome.Error, "1000 bytes") {
		t.Fatalf("status %s, outcome %+v", run.Status, run.Outcome)
	}
}

func TestUncertainEffectWaitsForReconcile(t *testing.T) {
	t.Parallel()
	var runs atomic.Int64
	slow := tool.MustNew("charge", "Charges a card.", func(ctx context.Context, _ struct{}) (string, error) {
		runs.Add(1)
		<-ctx.Done()
		return "", ctx.Err()
	}, tool.WithTimeout(20*time.Millisecond))
	m := scripted.New("pay", scripted.Script{Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: "charge"}}}, {Text: "paid"}}})
	a := build(t, hitch.Spec{Model: m, Tools: []tool.Tool{slow}})
	rt, _ := setup(t, a)
	run := runToRest(t, rt, a, "pay")
	if run.Status != hitchtype.StatusWaiting {
		t.Fatalf("status %s, outcome %+v", run.Status, run.Outcome)
	}
	ctx := context.Background()
	if err := rt.Reconcile(ctx, run.ID, hitch.Reconciliation{Call: "t1c2"}); !errors.Is(err, hitch.ErrUnknownCall) {
		t.Errorf("reconcile unknown call: %v", err)
	}
	if err := rt.Reconcile(ctx, run.ID, hitch.Reconciliation{Call: "t1c1", Output: "charged once", By: "ops"}); err != nil {
		t.Fatal(err)
	}
	run, err := rt.Await(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != hitchtype.StatusCompleted || run.Outcome.Answer != "paid" {
		t.Fatalf("after reconcile: status %s, outcome %+v", run.Status, run.Outcome)
	}
	if err := rt.Reconcile(ctx, run.ID, hitch.Reconciliation{Call: "t1c1", Output: "again"}); err == nil {
		t.Error("reconciling an ended run twice succeeded")
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("non-replayable body ran %d times", n)
	}
}

func TestReplayableToolRunsAgainAfterTimeout(t *testing.T) {
	t.Parallel()
	var runs atomic.Int64
	flaky := tool.MustNew("lookup", "Reads a value.", func(ctx context.Context, _ struct{}) (string, error) {
		if runs.Add(1) < 3 {
			<-ctx.Done()
			return "", ctx.Err()
		}
		return "42", nil
	}, tool.WithTimeout(10*time.Millisecond), tool.WithReplay(3))
	m := scripted.New("look", scripted.Script{Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: "lookup"}}}, {Text: "42"}}})
	a := build(t, hitch.Spec{Model: m, Tools: []tool.Tool{flaky}})
	rt, _ := setup(t, a)
	run := runToRest(t, rt, a, "look")
	if run.Status != hitchtype.StatusCompleted || runs.Load() != 3 {
		t.Fatalf("status %s, body runs %d, outcome %+v", run.Status, runs.Load(), run.Outcome)
	}
	// Each timed-out attempt is in the journal before the next one starts.
	if k := kinds(journal(t, rt, run.ID)); !strings.Contains(k, "call.started call.lost call.started call.lost call.started call.settled") {
		t.Errorf("journal: %s", k)
	}
}

func TestContinueOnUncertainTellsTheModel(t *testing.T) {
	t.Parallel()
	slow := tool.MustNew("send", "Sends mail.", func(ctx context.Context, _ struct{}) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}, tool.WithTimeout(10*time.Millisecond))
	m := scripted.New("mail", scripted.Script{Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: "send"}}}, {Text: "maybe sent"}}})
	a := build(t, hitch.Spec{Model: m, Tools: []tool.Tool{slow}, Limits: hitch.Limits{ContinueOnUncertain: true}})
	rt, _ := setup(t, a)
	run := runToRest(t, rt, a, "mail")
	if run.Status != hitchtype.StatusCompleted {
		t.Fatalf("status %s, outcome %+v", run.Status, run.Outcome)
	}
	if msgs := strings.Join(told(journal(t, rt, run.ID)), "\n"); !strings.Contains(msgs, `"unconfirmed":true`) {
		t.Errorf("model was not told the outcome is unknown:\n%s", msgs)
	}
}

func TestCancelStopsWorkAndIsIdempotent(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}), make(chan struct{})
	var late atomic.Bool
	deaf := tool.MustNew("deaf", "Ignores cancellation.", func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		<-release // deaf to ctx on purpose: it returns only once the run is cancelled
		late.Store(true)
		return "late result", nil
	})
	m := scripted.New("slow", scripted.Script{Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: "deaf"}}}, {Text: "never"}}})
	a := build(t, hitch.Spec{Model: m, Tools: []tool.Tool{deaf}})
	rt, _ := setup(t, a)
	ctx := context.Background()
	res, err := rt.Start(ctx, a, "go")
	if err != nil {
		t.Fatal(err)
	}
	<-started
	run, err := rt.Cancel(ctx, res.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != hitchtype.StatusCancelled || len(run.Outcome.Uncertain) != 1 {
		t.Fatalf("status %s, outcome %+v", run.Status, run.Outcome)
	}
	again, err := rt.Cancel(ctx, res.Run.ID)
	if err != nil || again.Status != hitchtype.StatusCancelled || again.Position != run.Position {
		t.Fatalf("second cancel: %+v, %v", again, err)
	}
	// The abandoned body finishes later; its result must never be appended.
	close(release)
	for !late.Load() {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	es := journal(t, rt, res.Run.ID)
	if last := es[len(es)-1]; last.Kind != "run.ended" {
		t.Errorf("last entry is %s, want run.ended", last.Kind)
	}
	if strings.Contains(kinds(es), "call.settled") {
		t.Errorf("late result was journaled: %s", kinds(es))
	}
}

func TestPolicyFailsClosed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		pol  policy.Policy
		want string
	}{
		{"error", policy.Func(func(context.Context, policy.Action) (policy.Decision, error) {
			return policy.Decision{}, errors.New("rules unavailable")
		}), "rules unavailable"},
		{"timeout", policy.Func(func(context.Context, policy.Action) (policy.Decision, error) {
			time.Sleep(200 * time.Millisecond) // ignores its context
			return policy.Decision{Verdict: policy.Allow}, nil
		}), "timed out"},
		{"bad verdict", policy.Func(func(context.Context, policy.Action) (policy.Decision, error) {
			return policy.Decision{Verdict: "maybe"}, nil
		}), "unknown verdict"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int64
			m := scripted.New("p", scripted.Script{Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: "add", Args: `{"a":1,"b":1}`}}}, {Text: "x"}}})
			a := build(t, hitch.Spec{Model: m, Tools: []tool.Tool{addTool(t, &calls)}, Policy: tc.pol, Limits: hitch.Limits{PolicyTimeout: 20 * time.Millisecond}})
			rt, _ := setup(t, a)
			run := runToRest(t, rt, a, "go")
			if run.Status != hitchtype.StatusFailed || run.Outcome.Reason != "policy" || !strings.Contains(run.Outcome.Error, tc.want) {
				t.Fatalf("status %s, outcome %+v", run.Status, run.Outcome)
			}
			if calls.Load() != 0 {
				t.Error("the tool ran without a decision")
			}
		})
	}
}

func TestMaxTurnsIsAStopReason(t *testing.T) {
	t.Parallel()
	m := scripted.New("loop", scripted.Script{Repeat: true, Turns: []scripted.Turn{{Text: "thinking", Calls: []scripted.Call{{Name: "add", Args: `{"a":1,"b":1}`}}}}})
	a := build(t, hitch.Spec{Model: m, Tools: []tool.Tool{addTool(t, nil)}, Limits: hitch.Limits{ModelAttempts: 3}})
	rt, _ := setup(t, a)
	run := runToRest(t, rt, a, "loop")
	if run.Status != hitchtype.StatusCompleted || run.Outcome.Reason != "max_turns" {
		t.Fatalf("status %s, outcome %+v", run.Status, run.Outcome)
	}
}

func TestFinalTurnIsToolFree(t *testing.T) {
	t.Parallel()
	m := &recorder{Model: scripted.New("loop", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{{Name: "add", Args: `{"a":1,"b":1}`}}},
		{Calls: []scripted.Call{{Name: "add", Args: `{"a":2,"b":2}`}}},
		{Text: "partial report: 2 and 4"},
	}})}
	a := build(t, hitch.Spec{Model: m, Tools: []tool.Tool{addTool(t, nil)}, Limits: hitch.Limits{ModelAttempts: 3, FinalTurn: true}})
	rt, _ := setup(t, a)
	run := runToRest(t, rt, a, "loop")
	if run.Status != hitchtype.StatusCompleted || run.Outcome.Reason != "max_turns" || run.Outcome.Answer != "partial report: 2 and 4" {
		t.Fatalf("status %s, outcome %+v", run.Status, run.Outcome)
	}
	last := m.reqs[2]
	if len(last.Tools) != 0 || !strings.Contains(last.Messages[len(last.Messages)-1].Text, "last turn") {
		t.Errorf("the final turn offered tools or no note: %+v", last)
	}
	if len(m.reqs[1].Tools) != 1 {
		t.Errorf("an earlier turn lost its tools")
	}
}

func TestBuildReportsEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := hitch.Build(hitch.Spec{Name: "bad name!", Limits: hitch.Limits{ToolConcurrency: 100, ModelAttempts: -1, MaxToolResult: -5}})
	var ces hitch.ConfigErrors
	if !errors.As(err, &ces) {
		t.Fatalf("err = %v", err)
	}
	fields := map[string]bool{}
	for _, ce := range ces {
		fields[ce.Field] = true
	}
	for _, f := range []string{"Name", "Model", "Policy", "Limits.ToolConcurrency", "Limits.ModelAttempts", "Limits.MaxToolResult"} {
		if !fields[f] {
			t.Errorf("no problem reported for %s; got %v", f, err)
		}
	}
	if !strings.Contains(err.Error(), "want 1–64") {
		t.Errorf("error does not give the range: %v", err)
	}
}

func TestUsageIsNullWhenAReplyOmitsIt(t *testing.T) {
	t.Parallel()
	m := scripted.New("u", scripted.Script{Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: "add", Args: `{"a":1,"b":1}`}}, NoUsage: true}, {Text: "2"}}})
	a := build(t, hitch.Spec{Model: m, Tools: []tool.Tool{addTool(t, nil)}})
	rt, _ := setup(t, a)
	run := runToRest(t, rt, a, "u")
	u := run.Outcome.Usage
	if u.InputTokens != nil || u.OutputTokens != nil || u.Generations != 2 {
		b, _ := json.Marshal(u)
		t.Errorf("usage = %s, want null counters over 2 replies", b)
	}
}

// TestCancelFromAnotherProcess cancels a run that another runtime drives:
// the request is durable, the live runner sees it at its next poll and
// stops its work, and the canceller sees the run end within its wait.
func TestCancelFromAnotherProcess(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	slow := tool.MustNew("slow", "Waits.", func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	})
	m := scripted.New("slow", scripted.Script{Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: "slow"}}}, {Text: "never"}}})
	a := build(t, hitch.Spec{Model: m, Tools: []tool.Tool{slow}})
	rt1, st := setup(t, a)
	rt2, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{a}, Node: "other"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt2.Close(context.Background())
	ctx := context.Background()
	res, err := rt1.Start(ctx, a, "go")
	if err != nil {
		t.Fatal(err)
	}
	<-started
	run, err := rt2.Cancel(ctx, res.Run.ID)
	if err != nil || run.Status != hitchtype.StatusCancelled || len(run.Outcome.Uncertain) != 1 {
		t.Fatalf("cancel from another runtime: %+v %v", run, err)
	}
}

// TestDeltasStreamToObservers: model text streams to OnEvent as it comes,
// while the journal keeps the whole reply.
func TestDeltasStreamToObservers(t *testing.T) {
	t.Parallel()
	m := scripted.New("talk", scripted.Script{Turns: []scripted.Turn{{Text: "a longer answer, streamed in pieces"}}})
	a := build(t, hitch.Spec{Model: m})
	st := hitchtest.OpenStore(t, filepath.Join(t.TempDir(), "d.db"))
	var mu sync.Mutex
	var deltas []string
	rt := hitchtest.Open(t, hitch.Config{Store: st, Agents: []*hitch.Agent{a}, OnEvent: func(ev hitch.Event) {
		if ev.Delta != "" {
			mu.Lock()
			deltas = append(deltas, ev.Delta)
			mu.Unlock()
		}
	}})
	run := runToRest(t, rt, a, "talk")
	mu.Lock()
	defer mu.Unlock()
	if len(deltas) < 2 || strings.Join(deltas, "") != run.Outcome.Answer {
		t.Fatalf("deltas %q, answer %q", deltas, run.Outcome.Answer)
	}
}
