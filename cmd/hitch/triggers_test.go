package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestTriggersFromTheCommandLine(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{
		"hitch.yaml": scriptedYAML("runs.db", "{name: ops, model: m, policy: allow_all, workspace: .}") + `triggers:
  - name: past
    at: 2020-01-01T00:00:00Z
    agent: ops
    input: catch up
  - name: nightly
    cron: "0 3 * * *"
    zone: America/New_York
    agent: ops
    input: nightly report
`,
		"script.yaml": "turns:\n  - text: done\n",
	})
	cfg := dir + "/hitch.yaml"
	// The worker stores the bindings and dispatches the one that is due
	// (missed long ago: fired once, by the default policy), then drives
	// the run it started.
	if code, _, errOut := cliWithin(t, 3*time.Second, "worker", "--poll", "10ms", "-c", cfg); code != exitOK {
		t.Fatalf("worker: exit %d %s", code, errOut)
	}
	code, out, errOut := cli(t, "triggers", "list", "--json", "-c", cfg)
	if code != exitOK {
		t.Fatalf("list: exit %d %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("list: %s", out)
	}
	var nightly, past triggerLine
	if json.Unmarshal([]byte(lines[0]), &nightly) != nil || json.Unmarshal([]byte(lines[1]), &past) != nil {
		t.Fatalf("list: %s", out)
	}
	if past.ID != "past" || past.State != "done" || past.FireCount != 1 || nightly.State != "active" || nightly.NextFire == "" ||
		nightly.Spec.Zone != "America/New_York" {
		t.Fatalf("list: %+v %+v", past, nightly)
	}
	code, out, _ = cli(t, "runs", "show", "trg:past:20200101T000000Z", "-c", cfg)
	if code != exitOK || !strings.Contains(out, "done") {
		t.Fatalf("the triggered run: exit %d %s", code, out)
	}
	code, out, _ = cli(t, "triggers", "pause", "nightly", "-c", cfg)
	if code != exitOK || !strings.Contains(out, "trigger nightly: paused") {
		t.Fatalf("pause: exit %d %s", code, out)
	}
	code, out, _ = cli(t, "triggers", "resume", "nightly", "--json", "-c", cfg)
	if code != exitOK || json.Unmarshal([]byte(out), &nightly) != nil || nightly.State != "active" {
		t.Fatalf("resume: exit %d %s", code, out)
	}
	code, out, _ = cli(t, "triggers", "show", "nightly", "-c", cfg)
	if code != exitOK || !strings.Contains(out, "0 3 * * * (America/New_York)") || !strings.Contains(out, "start ops") {
		t.Fatalf("show: exit %d %s", code, out)
	}
	if code, out, _ = cli(t, "triggers", "remove", "nightly", "-c", cfg); code != exitOK || !strings.Contains(out, "removed") {
		t.Fatalf("remove: exit %d %s", code, out)
	}
	if code, _, _ = cli(t, "triggers", "remove", "nightly", "-c", cfg); code != exitNotFound {
		t.Fatalf("remove again: exit %d, want %d", code, exitNotFound)
	}
	if code, _, _ = cli(t, "triggers", "show", "nightly", "-c", cfg); code != exitNotFound {
		t.Fatalf("show a removed binding: exit %d, want %d", code, exitNotFound)
	}
	if code, _, _ = cli(t, "triggers", "list", "--state", "sleeping", "-c", cfg); code != exitUsage {
		t.Fatalf("list --state sleeping: exit %d, want %d", code, exitUsage)
	}
}
