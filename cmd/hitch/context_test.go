package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hitch-dev/hitch/hitchtype"
)

// TestRunsShowContextMeter: `runs show` prints the latest request's
// context meter (window, estimate and fill, estimator, categories, the
// provider's count, "not reported" when it gave none) and a line for
// each request; --json carries every request's account.
func TestRunsShowContextMeter(t *testing.T) {
	t.Parallel()
	_, cfg := writeConfig(t, "store: runs.db\nprices: {scripted/script: {input: 1, output: 2}}\nmodels:\n  m: {provider: scripted, script: script.yaml}\n"+
		"agents:\n  - {name: ops, model: m, instructions: You keep notes., policy: allow_all, limits: {context_window: 8000}}\n",
		"turns:\n  - calls: [{name: nothing}]\n  - {text: done, no_usage: true}\n")
	if code, out, errOut := cli(t, "run", "-c", cfg, "--id", "m1", "take a note"); code != exitOK {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := cli(t, "runs", "show", "m1", "-c", cfg)
	if code != exitOK {
		t.Fatalf("runs show: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"context  latest model request: attempt 2, turn 2",
		"  window     8000 tokens",
		"% of the window (estimator bytes/4)",
		"  meter      [#",
		"agent instructions  4",
		"tool results",
		"  reported   input not reported, output not reported",
		"ATTEMPT  TURN  PURPOSE  ESTIMATE  FILL  INPUT",
		"spent    not priced (a model without a price, or a call that reported no usage); 1 run in the family",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("runs show lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "input 0") {
		t.Errorf("runs show reports a count the provider did not give as 0:\n%s", out)
	}

	code, out, _ = cli(t, "runs", "show", "m1", "-c", cfg, "--json")
	var v struct {
		Requests []hitchtype.ContextRequest `json:"requests"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &v) != nil || len(v.Requests) != 2 {
		t.Fatalf("runs show --json: exit %d\n%s", code, out)
	}
	for _, r := range v.Requests {
		a := r.Context
		if a == nil || a.Window != 8000 || a.Estimator != "bytes/4" || a.Estimate == 0 || a.Estimate != a.Categories.Sum() {
			t.Errorf("request %d: account %+v", r.Attempt, a)
		}
	}
	if u := v.Requests[0].Usage; u == nil || u.InputTokens == nil {
		t.Errorf("the first reply's usage is missing: %+v", v.Requests[0])
	}
	if v.Requests[1].Usage != nil || v.Requests[1].Result != "reply" {
		t.Errorf("the second reply reported no usage, got %+v", v.Requests[1])
	}
}

// TestSessionsShowCost: `sessions show` says what the session has cost so
// far, summed over its submissions' runs.
func TestSessionsShowCost(t *testing.T) {
	t.Parallel()
	_, cfg := writeConfig(t, "store: runs.db\nprices: {scripted/script: {input: 1000, output: 2000}}\nmodels:\n  m: {provider: scripted, script: script.yaml}\n"+
		"agents:\n  - {name: ops, model: m, policy: allow_all}\n",
		"turns:\n  - text: noted\nrepeat: true\n")
	for _, msg := range []string{"one", "two"} {
		if code, out, errOut := cli(t, "sessions", "send", "s1", msg, "-c", cfg); code != exitOK {
			t.Fatalf("send: exit %d\n%s%s", code, out, errOut)
		}
	}
	code, out, _ := cli(t, "sessions", "show", "s1", "-c", cfg, "--json")
	var v struct {
		CostUSD     *float64 `json:"cost_usd"`
		RunningCost struct {
			USD  *float64 `json:"usd"`
			Runs int      `json:"runs"`
			Live int      `json:"live"`
		} `json:"running_cost"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &v) != nil || v.CostUSD == nil || v.RunningCost.USD == nil {
		t.Fatalf("sessions show --json: exit %d\n%s", code, out)
	}
	if rc := v.RunningCost; rc.Runs != 2 || rc.Live != 0 || *rc.USD == 0 || *rc.USD-*v.CostUSD > 1e-12 || *v.CostUSD-*rc.USD > 1e-12 {
		t.Errorf("running cost %+v, want $%v over 2 runs", rc, *v.CostUSD)
	}
	code, out, _ = cli(t, "sessions", "show", "s1", "-c", cfg)
	if want := fmt.Sprintf("cost: $%.6f so far; 2 runs in the session\n", *v.CostUSD); code != exitOK || !strings.Contains(out, want) {
		t.Errorf("sessions show lacks %q:\n%s", want, out)
	}
}
