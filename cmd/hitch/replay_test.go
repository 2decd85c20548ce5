package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplayReportsEachRun: runs recorded on version 1 are replayed on the
// version the config declares next: one with the same script (same, exit 0), one that globs another
// pattern at turn 1 (diverged, both calls shown, exit 9) and one with
// another answer (answer changed); as a table, JSON lines and JUnit XML.
func TestReplayReportsEachRun(t *testing.T) {
	t.Parallel()
	script := func(pattern, answer string) string {
		return "turns:\n  - calls: [{name: glob, args: '{\"pattern\": \"" + pattern + "\"}'}]\n  - text: " + answer + "\n"
	}
	models := "store: runs.db\nmodels:\n  v1: {provider: scripted, script: v1.yaml}\n  v2: {provider: scripted, script: v2.yaml}\n" +
		"  v3: {provider: scripted, script: v3.yaml}\n  v4: {provider: scripted, script: v4.yaml}\nagents:\n"
	agent := func(v int) string {
		return "  - {name: finder, version: " + string(rune('0'+v)) + ", model: v" + string(rune('0'+v)) + ", tools: [glob], policy: allow_all}\n"
	}
	dir := writeFiles(t, map[string]string{
		"v1.hitch.yaml": models + agent(1),
		"v2.hitch.yaml": models + agent(2),
		"v3.hitch.yaml": models + agent(3),
		"v4.hitch.yaml": models + agent(4),
		"v1.yaml":       script("*.yaml", "found them"),
		"v2.yaml":       script("*.yaml", "found them"),
		"v3.yaml":       script("*.md", "found them"),
		"v4.yaml":       script("*.yaml", "found them all"),
	})
	cfg := func(v string) string { return filepath.Join(dir, v+".hitch.yaml") }
	record := cfg("v1")
	for _, id := range []string{"rec1", "rec2"} {
		if code, out, errOut := cli(t, "run", "-c", record, "--id", id, "find the configs"); code != exitOK {
			t.Fatalf("record %s: exit %d\n%s\n%s", id, code, out, errOut)
		}
	}

	code, out, errOut := cli(t, "replay", "-c", cfg("v2"), "--agent", "finder")
	if code != exitOK || strings.Count(out, " same ") != 2 || !strings.Contains(errOut, "2 replayed: 2 same") {
		t.Errorf("same script: exit %d\n%s\n%s", code, out, errOut)
	}

	junit := filepath.Join(dir, "replay.xml")
	code, out, errOut = cli(t, "replay", "rec1", "-c", cfg("v3"), "--junit", junit)
	for _, want := range []string{"diverged at turn 1", `the recording did: glob({"pattern": "*.yaml"})`, `the new version did:         glob({"pattern": "*.md"})`} {
		if code != exitDiffers || !strings.Contains(out, want) {
			t.Errorf("diverged: exit %d, lacks %q\n%s\n%s", code, want, out, errOut)
		}
	}
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var suite junitSuite
	if err := xml.Unmarshal(b, &suite); err != nil || suite.Tests != 1 || suite.Failures != 1 || suite.Cases[0].Name != "rec1" ||
		suite.Cases[0].Failure == nil || suite.Cases[0].Failure.Message != "diverged at turn 1" {
		t.Errorf("junit: %v\n%s", err, b)
	}

	code, out, errOut = cli(t, "replay", "rec1", "rec2", "-c", cfg("v4"), "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitDiffers || len(lines) != 2 {
		t.Fatalf("answer changed --json: exit %d\n%s\n%s", code, out, errOut)
	}
	var r struct {
		Run, Verdict  string
		Version       int
		ReplayOutcome struct{ Answer string }   `json:"replay_outcome"`
		RecordedUsage struct{ Generations int } `json:"recorded_usage"`
		RecordedCost  *float64                  `json:"recorded_cost_usd"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &r); err != nil || r.Run != "rec1" || r.Verdict != "answer_changed" || r.Version != 4 ||
		r.ReplayOutcome.Answer != "found them all" || r.RecordedUsage.Generations != 2 {
		t.Errorf("answer changed: %v %+v\n%s", err, r, lines[0])
	}

	for _, bad := range [][]string{
		{"replay", "-c", cfg("v4")},
		{"replay", "rec1", "-c", cfg("v4"), "--agent", "finder"},
		{"replay", "rec1", "-c", cfg("v4"), "--limit", "0"},
	} {
		if code, _, _ := cli(t, bad...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", bad, code, exitUsage)
		}
	}
	if code, _, errOut := cli(t, "replay", "rec1", "-c", cfg("v4"), "--version", "7"); code != exitRefused || !strings.Contains(errOut, "finder version 7") {
		t.Errorf("replay on a version the config lacks: exit %d, want %d\n%s", code, exitRefused, errOut)
	}
	if code, _, _ := cli(t, "replay", "nope", "-c", cfg("v4")); code != exitNotFound {
		t.Errorf("replay of no run: exit %d, want %d", code, exitNotFound)
	}
}
