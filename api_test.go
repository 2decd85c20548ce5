package hitch_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/tool"
)

// TestBuildRefusesBudgetsItCannotKeep: a USD or wall-time budget too small
// to store would silently mean "unlimited"; it is refused instead, as are
// USD limits that are not numbers or are negative.
func TestBuildRefusesBudgetsItCannotKeep(t *testing.T) {
	t.Parallel()
	m := scripted.New("m", scripted.Script{Turns: []scripted.Turn{{Text: "x"}}})
	for _, tc := range []struct {
		budget hitch.Budget
		field  string
	}{
		{hitch.Budget{USD: 0.0000004}, "Budget.USD"},
		{hitch.Budget{USD: math.NaN()}, "Budget.USD"},
		{hitch.Budget{USD: math.Inf(1)}, "Budget.USD"},
		{hitch.Budget{USD: -1}, "Budget.USD"},
		{hitch.Budget{WallTime: 500 * time.Microsecond}, "Budget.WallTime"},
		{hitch.Budget{WallTime: -time.Second}, "Budget.WallTime"},
		{hitch.Budget{Tokens: -1}, "Budget.Tokens"},
		{hitch.Budget{ModelCalls: -1}, "Budget.ModelCalls"},
		{hitch.Budget{ToolCalls: -1}, "Budget.ToolCalls"},
	} {
		_, err := hitch.Build(hitch.Spec{Name: "b", Model: m, Policy: policy.AllowAll(), Budget: &tc.budget})
		var ces hitch.ConfigErrors
		if !errors.As(err, &ces) || len(ces) != 1 || ces[0].Field != tc.field {
			t.Errorf("%+v: %v, want one problem with %s", tc.budget, err, tc.field)
		}
	}
	if _, err := hitch.Build(hitch.Spec{Name: "b", Model: m, Policy: policy.AllowAll(), Budget: &hitch.Budget{USD: 0.000001, WallTime: time.Millisecond}}); err != nil {
		t.Errorf("the smallest budgets: %v", err)
	}
}

// TestFamilyBudgetSpeaksTheSpecsUnits: FamilyBudget gives back the limits
// in the units Spec.Budget took them.
func TestFamilyBudgetSpeaksTheSpecsUnits(t *testing.T) {
	t.Parallel()
	want := hitch.Budget{Tokens: 100000, USD: 2.5, ModelCalls: 10, ToolCalls: 20, WallTime: 30 * time.Minute}
	a := build(t, hitch.Spec{Model: scripted.New("m", scripted.Script{Turns: []scripted.Turn{{Text: "x"}}}), Budget: &want})
	rt, _ := setup(t, a)
	run := runToRest(t, rt, a, "go")
	limits, used, ok, err := rt.FamilyBudget(context.Background(), run.ID)
	if err != nil || !ok || limits != want {
		t.Fatalf("limits %+v (%v %v), want %+v", limits, ok, err, want)
	}
	if used.WallTime <= 0 || used.WallTime > time.Minute {
		t.Errorf("used %+v", used)
	}
}

// TestDecodeAnswerRefusesMaxTurns: a run stopped at max_turns completed
// without a final answer; decoding it says so.
func TestDecodeAnswerRefusesMaxTurns(t *testing.T) {
	t.Parallel()
	m := scripted.New("loop", scripted.Script{Repeat: true, Turns: []scripted.Turn{{Text: `{"label":"x"}`, Calls: []scripted.Call{{Name: "add", Args: `{"a":1,"b":1}`}}}}})
	a := build(t, hitch.Spec{Model: m, Tools: []tool.Tool{addTool(t, nil)}, Limits: hitch.Limits{ModelAttempts: 2}})
	rt, _ := setup(t, a)
	run := runToRest(t, rt, a, "loop")
	if run.Outcome == nil || run.Outcome.Reason != "max_turns" {
		t.Fatalf("outcome %+v", run.Outcome)
	}
	if _, err := hitch.DecodeAnswer[verdict](run); err == nil || !strings.Contains(err.Error(), "max_turns") {
		t.Errorf("decode a max_turns answer: %v", err)
	}
}
