package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHeldCallReleasedFromTheCommandLine: a config's pre_tool command holds
// a bash call; hitch run parks; runs show names the held call; hitch calls
// complete --execute runs its body once and follows the run to its end; a
// second release is refused (exit 5).
func TestHeldCallReleasedFromTheCommandLine(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{
		"hitch.yaml": scriptedYAML("runs.db", `name: ops
    model: m
    tools: [bash]
    policy: allow_all
    hooks:
      - {name: board, point: pre_tool, match: [bash], command: [./hold.sh]}`),
		"script.yaml": "turns:\n  - calls: [{name: bash, args: '{\"command\": \"echo ran >> effects.txt\"}'}]\n  - text: done\n",
		"hold.sh":     "#!/bin/sh\necho '{\"action\": \"hold\", \"reason\": \"the change board decides\"}'\n",
	})
	if err := os.Chmod(filepath.Join(dir, "hold.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "hitch.yaml")
	code, out, errOut := cli(t, "run", "-c", cfg, "--id", "h1", "go")
	if code != exitWaiting {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = cli(t, "runs", "show", "h1", "-c", cfg)
	if code != exitOK || !strings.Contains(out, "parked on") || !strings.Contains(out, "t1c1") {
		t.Errorf("runs show: exit %d\n%s", code, out)
	}
	code, out, errOut = cli(t, "calls", "complete", "h1", "t1c1", "-c", cfg, "--execute", "--by", "board")
	if code != exitOK || !strings.Contains(out, "answer: done") {
		t.Fatalf("complete --execute: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut := cli(t, "calls", "complete", "h1", "t1c1", "-c", cfg, "--execute"); code != exitRefused {
		t.Errorf("second release: exit %d %s", code, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "effects.txt")); string(b) != "ran\n" {
		t.Errorf("effects %q, want the body once", b)
	}
}

// TestHookConfigErrorsExitTwo: bad hooks are config problems, every one
// named with its file, line and field, and the command exits 2.
func TestHookConfigErrorsExitTwo(t *testing.T) {
	t.Parallel()
	_, cfg := writeConfig(t, scriptedYAML("runs.db", `name: ops
    model: m
    policy: allow_all
    hooks:
      - {point: pre_tool, command: [./missing.sh]}
      - {point: post_turn, url: "https://hooks.example/validate"}`),
		"turns:\n  - text: done\n")
	code, _, errOut := cli(t, "run", "-c", cfg, "go")
	if code != exitUsage || !strings.Contains(errOut, cfg+":9: agents[0].hooks[0].command[0]") || !strings.Contains(errOut, cfg+":10: agents[0].hooks[1].secret: is required") {
		t.Errorf("exit %d\n%s", code, errOut)
	}
}
