package main

import (
	"strings"
	"testing"
)

// TestWakeAndCallsFromTheCommandLine: a run parks on an awaited event and
// a pending external call; runs show says on what and until when; hitch
// wake and hitch calls complete move it on, and a second delivery or
// completion is refused with exit 5.
func TestWakeAndCallsFromTheCommandLine(t *testing.T) {
	t.Parallel()
	_, cfg := writeConfig(t, scriptedYAML("runs.db", "{name: ops, model: m, tools: [await_event, ship], policy: allow_all}")+shipTool,
		"turns:\n  - calls: [{name: await_event, args: '{\"name\": \"payment.received\", \"timeout\": \"30m\"}'}, {name: ship, args: '{\"order\": 7}'}]\n  - text: done\n")
	code, out, errOut := cli(t, "run", "-c", cfg, "--id", "order-7", "ship order 7 once paid")
	if code != exitWaiting {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = cli(t, "runs", "show", "order-7", "-c", cfg)
	for _, want := range []string{"parked on", `event "payment.received"`, "external call ship", "until ", "hitch wake order-7"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("runs show lacks %q: exit %d\n%s", want, code, out)
		}
	}
	code, out, _ = cli(t, "runs", "show", "order-7", "-c", cfg, "--json")
	if code != exitOK || !strings.Contains(out, `"waits":[{"kind":"event","call":"t1c1","tool":"await_event","event":"payment.received","until":`) {
		t.Errorf("runs show --json: exit %d\n%s", code, out)
	}
	if code, _, errOut := cli(t, "wake", "order-7", "-c", cfg, "--event", "payment.lost"); code != exitRefused || !strings.Contains(errOut, "no wake is armed") {
		t.Errorf("wake of another event: exit %d %s", code, errOut)
	}
	if code, _, _ := cli(t, "wake", "order-7", "-c", cfg, "--event", "payment.received", "--data", "{"); code != exitUsage {
		t.Errorf("bad data: exit %d", code)
	}
	code, out, errOut = cli(t, "wake", "order-7", "-c", cfg, "--event", "payment.received", "--data", `{"amount": 12}`)
	if code != exitWaiting || !strings.Contains(out, `event "payment.received" delivered`) {
		t.Fatalf("wake: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut := cli(t, "wake", "order-7", "-c", cfg, "--event", "payment.received"); code != exitRefused || !strings.Contains(errOut, "already delivered") {
		t.Errorf("second wake: exit %d %s", code, errOut)
	}
	if code, _, _ := cli(t, "calls", "complete", "order-7", "t1c2", "-c", cfg, "--output", "x", "--execute"); code != exitUsage {
		t.Errorf("two completions at once: exit %d", code)
	}
	code, out, errOut = cli(t, "calls", "complete", "order-7", "t1c2", "-c", cfg, "--output", "shipped as #99")
	if code != exitOK || !strings.Contains(out, "completed outside (by cli): shipped as #99") || !strings.Contains(out, "answer: done") {
		t.Fatalf("complete: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut := cli(t, "calls", "complete", "order-7", "t1c2", "-c", cfg, "--output", "again"); code != exitRefused || !strings.Contains(errOut, "already has a result") {
		t.Errorf("second completion: exit %d %s", code, errOut)
	}
	if code, _, _ := cli(t, "wake", "nope", "-c", cfg, "--event", "x"); code != exitNotFound {
		t.Errorf("wake of a missing run: exit %d", code)
	}
}

// TestPruneFromTheCommandLine: a dry run lists what would go and deletes
// nothing; a prune deletes it, and the run is then not found (exit 6).
func TestPruneFromTheCommandLine(t *testing.T) {
	t.Parallel()
	dir, cfg := scriptedConfig(t, "turns:\n  - text: done\n")
	_ = dir
	if code, out, errOut := cli(t, "run", "-c", cfg, "--id", "old-1", "hello"); code != exitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, _ := cli(t, "prune", "-c", cfg, "--dry-run"); code != exitOK || !strings.Contains(out, "would prune 0 families") {
		t.Errorf("dry run at the default age: exit %d\n%s", code, out)
	}
	code, out, _ := cli(t, "prune", "-c", cfg, "--dry-run", "--older-than", "1ns")
	if code != exitOK || !strings.Contains(out, "would prune 1 families (1 runs)") || !strings.Contains(out, "old-1") {
		t.Fatalf("dry run: exit %d\n%s", code, out)
	}
	if code, out, _ := cli(t, "runs", "show", "old-1", "-c", cfg); code != exitOK {
		t.Fatalf("a dry run deleted the run: exit %d\n%s", code, out)
	}
	code, out, _ = cli(t, "prune", "-c", cfg, "--older-than", "1ns", "--json")
	if code != exitOK || !strings.Contains(out, `"roots":["old-1"],"runs":1`) {
		t.Fatalf("prune: exit %d\n%s", code, out)
	}
	if code, _, _ := cli(t, "runs", "events", "old-1", "-c", cfg); code != exitNotFound {
		t.Errorf("events of a pruned run: exit %d", code)
	}
	if code, _, _ := cli(t, "prune", "-c", cfg, "--older-than", "0s"); code != exitUsage {
		t.Errorf("--older-than 0: exit %d", code)
	}
}
