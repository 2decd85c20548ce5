package hitch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/hook"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/tool"
)

// waitAgent builds an agent whose first turn makes the given calls and
// whose second answers "done". It has await_event and the external tool
// ship (timeout 1h).
func waitAgent(calls ...scripted.Call) (*hitch.Agent, error) {
	ship, err := tool.NewExternal("ship", "Ships an order; the warehouse answers later.", nil, tool.WithTimeout(time.Hour))
	if err != nil {
		return nil, err
	}
	m := scripted.New("waiter", scripted.Script{Turns: []scripted.Turn{{Calls: calls}, {Text: "done"}}})
	return hitch.Build(hitch.Spec{Name: "waiter", Model: m, Tools: []tool.Tool{tool.AwaitEvent(), ship}, Policy: payPolicy})
}

func mustWaitAgent(t *testing.T, calls ...scripted.Call) *hitch.Agent {
	t.Helper()
	a, err := waitAgent(calls...)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

const awaitDeploy = `{"name":"deploy.done","timeout":"1h"}`

// position is a run's journal length, to show a refused command changed
// nothing.
func position(t *testing.T, st store.Store, id string) int64 {
	t.Helper()
	r, err := st.RunGet(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r.Position
}

// TestWakeDeliveredResumesTheRun: a run parks on await_event, says what it
// waits on and until when (its wake time is the deadline by the store's
// clock); the delivery resumes it with the event's data; a second delivery
// is refused and changes nothing.
func TestWakeDeliveredResumesTheRun(t *testing.T) {
	t.Parallel()
	a := mustWaitAgent(t, scripted.Call{Name: "await_event", Args: awaitDeploy})
	rt, st := setup(t, a)
	ctx := context.Background()
	run := runToRest(t, rt, a, "deploy and wait")
	if run.Status != hitchtype.StatusWaiting {
		t.Fatalf("status %s", run.Status)
	}
	ws, err := rt.Waits(ctx, run.ID)
	if err != nil || len(ws) != 1 || ws[0].Kind != hitchtype.WaitEvent || ws[0].Event != "deploy.done" || ws[0].Until == nil {
		t.Fatalf("waits = %+v, %v", ws, err)
	}
	row, err := st.RunGet(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !row.WakeAt.Equal(*ws[0].Until) {
		t.Errorf("wake at %s, deadline %s", row.WakeAt, ws[0].Until)
	}
	if d := time.Until(*ws[0].Until); d < 59*time.Minute || d > time.Hour {
		t.Errorf("deadline in %s, want 1h", d)
	}
	if err := rt.Wake(ctx, run.ID, "deploy.other", nil, "test"); !errors.Is(err, hitch.ErrNoWake) {
		t.Errorf("wake of another event: %v", err)
	}
	if err := rt.Wake(ctx, run.ID, "deploy.done", json.RawMessage(`{"version":"1.2"}`), "ci"); err != nil {
		t.Fatal(err)
	}
	run, err = rt.Await(ctx, run.ID)
	if err != nil || run.Status != hitchtype.StatusCompleted {
		t.Fatalf("after the wake: %s %v", run.Status, err)
	}
	es := journal(t, rt, run.ID)
	if k := kinds(es); !strings.Contains(k, "wake.armed run.waiting wake.delivered") {
		t.Errorf("journal: %s", k)
	}
	if !strings.Contains(toolResult(t, es, "t1c1"), `{"version":"1.2"}`) {
		t.Errorf("the model was not shown the event's data: %q", toolResult(t, es, "t1c1"))
	}
	before := position(t, st, run.ID)
	if err := rt.Wake(ctx, run.ID, "deploy.done", nil, "ci"); !errors.Is(err, hitch.ErrWakeDelivered) {
		t.Errorf("second delivery: %v", err)
	}
	if got := position(t, st, run.ID); got != before {
		t.Errorf("a refused delivery wrote %d entries", got-before)
	}
}

// toolResult is the result the model was shown for call key, rebuilt from
// the journal's results.
func toolResult(t *testing.T, es []store.Entry, key string) string {
	t.Helper()
	for _, e := range es {
		var d struct {
			Call   string          `json:"call"`
			Output string          `json:"output"`
			Error  string          `json:"error"`
			Event  string          `json:"event"`
			Data   json.RawMessage `json:"data"`
		}
		if json.Unmarshal(e.Data, &d) != nil || d.Call != key {
			continue
		}
		switch e.Kind {
		case hitchtype.KindWakeDelivered:
			return d.Event + " " + string(d.Data)
		case hitchtype.KindWakeExpired, hitchtype.KindCallTimedOut:
			return e.Kind
		case hitchtype.KindCallCompleted, hitchtype.KindCallSettled, hitchtype.KindCallFailed:
			return d.Output + d.Error
		}
	}
	return ""
}

// TestWakeDeadlineLeg: a wake that never comes fires its deadline leg by
// the store's clock (the model is told, the run goes on), and a delivery
// after the deadline is refused, before and after the lapse is recorded,
// changing nothing.
func TestWakeDeadlineLeg(t *testing.T) {
	t.Parallel()
	a := mustWaitAgent(t, scripted.Call{Name: "await_event", Args: awaitDeploy})
	rt, st, clk := setupAhead(t, a)
	ctx := context.Background()
	never := runToRest(t, rt, a, "nobody comes")
	late := runToRest(t, rt, a, "somebody comes late")
	clk.advance(time.Hour + time.Second)

	run, err := rt.Await(ctx, never.ID) // due: its wake time has come
	if err != nil || run.Status != hitchtype.StatusCompleted {
		t.Fatalf("never: %s %v", run.Status, err)
	}
	if got := toolResult(t, journal(t, rt, never.ID), "t1c1"); got != hitchtype.KindWakeExpired {
		t.Errorf("never: the model was told %q", got)
	}

	for i := range 2 { // the first records the lapse, the second finds it
		err := rt.Wake(ctx, late.ID, "deploy.done", nil, "ci")
		if !errors.Is(err, hitch.ErrWakeExpired) || !strings.Contains(err.Error(), "deadline") {
			t.Errorf("late delivery %d: %v", i, err)
		}
	}
	run, err = rt.Await(ctx, late.ID)
	if err != nil || run.Status != hitchtype.StatusCompleted {
		t.Fatalf("late: %s %v", run.Status, err)
	}
	es := journal(t, rt, late.ID)
	if strings.Count(kinds(es), "wake.expired") != 1 || strings.Contains(kinds(es), "wake.delivered") {
		t.Errorf("late: %s", kinds(es))
	}
	before := position(t, st, late.ID)
	if err := rt.Wake(ctx, late.ID, "deploy.done", nil, "ci"); !errors.Is(err, hitch.ErrWakeExpired) {
		t.Errorf("delivery to an ended run: %v", err)
	}
	if position(t, st, late.ID) != before {
		t.Error("a refused delivery wrote entries")
	}
}

// TestAwaitEventBadArguments: arguments that make no wake are a failure
// the model sees; the run does not park.
func TestAwaitEventBadArguments(t *testing.T) {
	t.Parallel()
	for _, args := range []string{
		`{"timeout":"1h"}`,
		`{"name":"x","timeout":"1h","until":"2030-01-01T00:00:00Z"}`,
		`{"name":"x","timeout":"-5m"}`,
		`{"name":"x","until":"2001-01-01T00:00:00Z"}`,
		`{"name":"x","timeout":"10000h"}`,
		`{"name":"x","when":"soon"}`,
		`{"name":"` + strings.Repeat("e", hitchtype.MaxEventNameBytes+1) + `"}`,
	} {
		a := mustWaitAgent(t, scripted.Call{Name: "await_event", Args: args})
		rt, _ := setup(t, a)
		run := runToRest(t, rt, a, "wait")
		es := journal(t, rt, run.ID)
		if run.Status != hitchtype.StatusCompleted || strings.Contains(kinds(es), "wake.armed") || !strings.Contains(kinds(es), "call.failed") {
			t.Errorf("%s: %s: %s", args, run.Status, kinds(es))
		}
	}
}

// TestPendingCallCompletedOnce: an external call parks the run with its
// deadline; the outside completion is the model's result; a second
// completion is refused and changes nothing.
func TestPendingCallCompletedOnce(t *testing.T) {
	t.Parallel()
	a := mustWaitAgent(t, scripted.Call{Name: "ship", Args: `{"order":42}`})
	rt, st := setup(t, a)
	ctx := context.Background()
	run := runToRest(t, rt, a, "ship it")
	ws, err := rt.Waits(ctx, run.ID)
	if err != nil || len(ws) != 1 || ws[0].Kind != hitchtype.WaitExternal || ws[0].Tool != "ship" || ws[0].Until == nil {
		t.Fatalf("waits = %+v, %v", ws, err)
	}
	if err := rt.CompleteCall(ctx, run.ID, hitch.Completion{Call: "t1c1", Execute: true}); !errors.Is(err, hitch.ErrNotHeld) {
		t.Errorf("execute a pending call: %v", err)
	}
	if err := rt.CompleteCall(ctx, run.ID, hitch.Completion{Call: "t1c1", Output: "shipped as #7", By: "warehouse"}); err != nil {
		t.Fatal(err)
	}
	run, err = rt.Await(ctx, run.ID)
	if err != nil || run.Status != hitchtype.StatusCompleted {
		t.Fatalf("after completion: %s %v", run.Status, err)
	}
	es := journal(t, rt, run.ID)
	if got := toolResult(t, es, "t1c1"); got != "shipped as #7" {
		t.Errorf("the model was shown %q", got)
	}
	before := position(t, st, run.ID)
	for _, c := range []hitch.Completion{{Call: "t1c1", Output: "shipped as #7"}, {Call: "t1c1", Error: "lost"}} {
		if err := rt.CompleteCall(ctx, run.ID, c); !errors.Is(err, hitch.ErrCallCompleted) {
			t.Errorf("second completion %+v: %v", c, err)
		}
	}
	if position(t, st, run.ID) != before {
		t.Error("a refused completion wrote entries")
	}
	if err := rt.CompleteCall(ctx, run.ID, hitch.Completion{Call: "t9c9", Output: "x"}); !errors.Is(err, hitch.ErrUnknownCall) {
		t.Errorf("unknown call: %v", err)
	}
}

// TestPendingCallTimesOut: past its deadline a pending call is settled as
// timed out when the run is next driven (the sweeper, or Await) and the
// model is told; a late completion is refused.
func TestPendingCallTimesOut(t *testing.T) {
	t.Parallel()
	a := mustWaitAgent(t, scripted.Call{Name: "ship", Args: `{}`})
	rt, _, clk := setupAhead(t, a)
	ctx := context.Background()
	run := runToRest(t, rt, a, "ship it")
	late := runToRest(t, rt, a, "ship it too")
	clk.advance(time.Hour + time.Second)
	sctx, stop := context.WithCancel(ctx)
	swept := make(chan error, 1)
	go func() { swept <- rt.Sweep(sctx, 10*time.Millisecond) }()
	defer func() {
		stop()
		if err := <-swept; err != nil {
			t.Error(err)
		}
	}()
	for _, id := range []string{run.ID, late.ID} {
		got, err := rt.Await(ctx, id)
		if err != nil || got.Status != hitchtype.StatusCompleted {
			t.Fatalf("%s: %s %v", id, got.Status, err)
		}
		if res := toolResult(t, journal(t, rt, id), "t1c1"); res != hitchtype.KindCallTimedOut {
			t.Errorf("%s: the model was told %q", id, res)
		}
	}
	if err := rt.CompleteCall(ctx, late.ID, hitch.Completion{Call: "t1c1", Output: "shipped"}); !errors.Is(err, hitch.ErrCallTimedOut) {
		t.Errorf("late completion: %v", err)
	}
}

// TestHeldCallReleased: a call held by the pre-tool hook is released to run
// its body once (Execute), or given a result without running it; a second
// release or completion is refused.
func TestHeldCallReleased(t *testing.T) {
	t.Parallel()
	var ran atomic.Int64
	hold := hooks{preTool: func(hook.Call) (hook.ToolVerdict, error) {
		return hook.ToolVerdict{Action: hook.Hold, Reason: "ask the warehouse"}, nil
	}}
	charge := tool.MustNew("charge", "Charges a card.", func(context.Context, struct{}) (string, error) {
		ran.Add(1)
		return "charged", nil
	})
	m := scripted.New("held", scripted.Script{Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: "charge"}}}, {Text: "over"}}})
	a := build(t, hitch.Spec{Model: m, Tools: []tool.Tool{charge}, Hooks: hold})
	rt, st := setup(t, a)
	ctx := context.Background()

	released := runToRest(t, rt, a, "pay")
	ws, err := rt.Waits(ctx, released.ID)
	if err != nil || len(ws) != 1 || ws[0].Kind != hitchtype.WaitHeld {
		t.Fatalf("waits = %+v, %v", ws, err)
	}
	if err := rt.CompleteCall(ctx, released.ID, hitch.Completion{Call: "t1c1", Execute: true, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	if run, err := rt.Await(ctx, released.ID); err != nil || run.Status != hitchtype.StatusCompleted || ran.Load() != 1 {
		t.Fatalf("released: %s %v, body ran %d times", run.Status, err, ran.Load())
	}
	before := position(t, st, released.ID)
	if err := rt.CompleteCall(ctx, released.ID, hitch.Completion{Call: "t1c1", Execute: true}); !errors.Is(err, hitch.ErrAnswered) {
		t.Errorf("second release: %v", err)
	}
	if position(t, st, released.ID) != before {
		t.Error("a refused release wrote entries")
	}

	answered := runToRest(t, rt, a, "pay")
	if err := rt.CompleteCall(ctx, answered.ID, hitch.Completion{Call: "t1c1", Output: "charged elsewhere"}); err != nil {
		t.Fatal(err)
	}
	if run, err := rt.Await(ctx, answered.ID); err != nil || run.Status != hitchtype.StatusCompleted || ran.Load() != 1 {
		t.Fatalf("answered: %s %v, body ran %d times", run.Status, err, ran.Load())
	}
	if err := rt.CompleteCall(ctx, answered.ID, hitch.Completion{Call: "t1c1", Output: "again"}); !errors.Is(err, hitch.ErrCallCompleted) {
		t.Errorf("second completion: %v", err)
	}
}

// TestCompletionFieldsAreChecked: contradictory completions and bad
// deliveries are refused before anything is read, naming the field.
func TestCompletionFieldsAreChecked(t *testing.T) {
	t.Parallel()
	a := mustWaitAgent(t, scripted.Call{Name: "ship"})
	rt, _ := setup(t, a)
	ctx := context.Background()
	for _, c := range []struct {
		err  error
		want string
	}{
		{rt.CompleteCall(ctx, "r", hitch.Completion{Call: "t1c1", Execute: true, Output: "x"}), "execute"},
		{rt.CompleteCall(ctx, "r", hitch.Completion{Call: "t1c1", Output: "x", Error: "y"}), "output, error"},
		{rt.Wake(ctx, "r", "", nil, ""), "event"},
		{rt.Wake(ctx, "r", "e", json.RawMessage(`{`), ""), "data"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("got %v, want an error naming %s", c.err, c.want)
		}
	}
}

// wakesChild parks one run on a wake and one on a pending call, says so,
// and waits to be killed.
func wakesChild(db string) int {
	ctx := context.Background()
	await, err := waitAgent(scripted.Call{Name: "await_event", Args: awaitDeploy}, scripted.Call{Name: "ship", Args: `{}`})
	if err != nil {
		return childFail(err)
	}
	rt, err := childOpen(ctx, db, hitch.Config{Agents: []*hitch.Agent{await}, LeaseTTL: crashLeaseTTL})
	if err != nil {
		return childFail(err)
	}
	go func() { _ = rt.Sweep(ctx, 10*time.Millisecond) }()
	for _, id := range []string{"w1", "w2"} {
		if _, err := rt.Start(ctx, await, "wait", hitch.WithID(id)); err != nil {
			return childFail(err)
		}
		if run, err := rt.Await(ctx, id); err != nil || run.Status != hitchtype.StatusWaiting {
			return childFail("child:", run.Status, err)
		}
		fmt.Println("PARKED")
	}
	select {} // until killed
}

// TestWakeAfterSIGKILL: a process parks runs on a wake and a pending call
// and is killed; a new process delivers the event and completes the call,
// and the runs finish there.
func TestWakeAfterSIGKILL(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "hitch.db")
	killChildAt(t, "wakes", "PARKED", db, "", 2)
	a := mustWaitAgent(t, scripted.Call{Name: "await_event", Args: awaitDeploy}, scripted.Call{Name: "ship", Args: `{}`})
	rt, _ := setupAt(t, db, a)
	ctx := context.Background()
	for _, id := range []string{"w1", "w2"} {
		ws, err := rt.Waits(ctx, id)
		if err != nil || len(ws) != 2 {
			t.Fatalf("%s waits = %+v, %v", id, ws, err)
		}
		if err := rt.Wake(ctx, id, "deploy.done", nil, "ci"); err != nil {
			t.Fatal(err)
		}
		if err := rt.CompleteCall(ctx, id, hitch.Completion{Call: "t1c2", Output: "shipped"}); err != nil {
			t.Fatal(err)
		}
		run, err := rt.Await(ctx, id)
		if err != nil || run.Status != hitchtype.StatusCompleted {
			t.Fatalf("%s: %s %v", id, run.Status, err)
		}
		es := journal(t, rt, id)
		if toolResult(t, es, "t1c1") != "deploy.done " || toolResult(t, es, "t1c2") != "shipped" {
			t.Errorf("%s: %s", id, kinds(es))
		}
	}
}
