package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hitch runs the CLI in this process and returns its exit code and output.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := run(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestDemo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, errOut := cli(t, "demo", "--dir", dir)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"deny — whole-file writes are not allowed", "t4c1 edit", "t5c1 bash", "approval (shell)",
		"t5c1 approved by demo", "answer refused: the answer is not JSON", `answer: {"files_changed":1,`, "run run_", ": completed",
		"journal: " + filepath.Join(dir, "demo.db")} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "workspace", "notes.md"))
	if err != nil || !strings.Contains(string(b), "We receive orders") {
		t.Errorf("the demo did not fix the file: %q %v", b, err)
	}
	// The journal outlives the process: read it back.
	code, out, _ = cli(t, "runs", "list", "--db", filepath.Join(dir, "demo.db"), "--json")
	var run struct{ ID, Status string }
	if code != exitOK || json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &run) != nil || run.Status != "completed" {
		t.Fatalf("runs list: exit %d, %s", code, out)
	}
	code, out, _ = cli(t, "runs", "show", run.ID, "--db", filepath.Join(dir, "demo.db"))
	if code != exitOK || !strings.Contains(out, "t3c1  write") || !strings.Contains(out, "denied") {
		t.Errorf("runs show: exit %d\n%s", code, out)
	}
	code, out, _ = cli(t, "runs", "events", run.ID, "--db", filepath.Join(dir, "demo.db"), "--json", "--after", "25")
	if code != exitOK || strings.Count(out, "\n") != 8 || !strings.Contains(out, `"kind":"run.ended"`) {
		t.Errorf("runs events --after 20: exit %d\n%s", code, out)
	}
}

func TestApprovalsFromTheCommandLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{
		"hitch.yaml": `store: runs.db
models:
  m: {provider: scripted, script: script.yaml}
agents:
  - name: ops
    model: m
    tools: [bash]
    workspace: .
    policy:
      - {tools: [bash], verdict: approval, requirement: prod, reason: touches production}
    approvers:
      - {name: carol, secret_env: HITCH_TEST_CAROL_SECRET_UNSET, requirements: [prod]}
      - {name: dave, secret: d-secret, requirements: ["*"]}
`,
		"script.yaml": "turns:\n  - calls: [{name: bash, args: '{\"command\": \"echo deployed >> effects.log\"}'}]\n  - text: done\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "hitch.yaml")
	code, out, _ := cli(t, "run", "-c", cfg, "--id", "dep-1", "deploy")
	if code != exitWaiting || !strings.Contains(out, "approval (prod)") {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	code, out, _ = cli(t, "approvals", "list", "-c", cfg)
	if code != exitOK || !strings.Contains(out, "dep-1") || !strings.Contains(out, "t1c1") || !strings.Contains(out, "prod") {
		t.Fatalf("list: exit %d\n%s", code, out)
	}
	for _, tc := range []struct {
		cred string
		want string
	}{
		{"dave:wrong", "wrong secret"},
		{"carol:anything", "HITCH_TEST_CAROL_SECRET_UNSET is not set"},
		{"nobody", `"name:secret"`},
	} {
		code, _, errOut := cli(t, "approvals", "approve", "dep-1", "t1c1", "-c", cfg, "--credential", tc.cred)
		if code == exitOK || !strings.Contains(errOut, tc.want) {
			t.Errorf("approve as %s: exit %d (%s)", tc.cred, code, errOut)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "effects.log")); len(b) != 0 {
		t.Fatal("the command ran before it was approved")
	}
	code, out, errOut := cli(t, "approvals", "approve", "dep-1", "t1c1", "-c", cfg, "--credential", "dave:d-secret")
	if code != exitOK || !strings.Contains(out, "t1c1 approved by dave") || !strings.Contains(out, "answer: done") {
		t.Fatalf("approve: exit %d\n%s\n%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "effects.log")); string(b) != "deployed\n" {
		t.Errorf("effects = %q", b)
	}
	code, _, _ = cli(t, "approvals", "approve", "dep-1", "t1c1", "-c", cfg, "--credential", "dave:d-secret")
	if code != exitRefused {
		t.Errorf("second approve: exit %d", code)
	}
}

func TestUsageAndConfigErrorsExitTwo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("agents:\n  - name: x\n    model: m\n    polcy: allow_all\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"run", "-c", bad, "hi"},
		{"run"},
		{"runs", "list", "--nosuchflag"},
		{"reconcile", "r", "c"},
	} {
		code, _, errOut := cli(t, args...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, exitUsage, errOut)
		}
	}
	_, _, errOut := cli(t, "run", "-c", bad, "hi")
	if !strings.Contains(errOut, "bad.yaml:4") || !strings.Contains(errOut, "polcy") {
		t.Errorf("config error does not name file, line and field: %s", errOut)
	}
	code, _, errOut := cli(t, "runs", "show", "nope", "--db", filepath.Join(dir, "x.db"))
	if code != exitNotFound {
		t.Errorf("show of a missing run: exit %d (%s)", code, errOut)
	}
	code, _, errOut = cli(t, "runs", "list", "--db", "/proc/hitch/x.db")
	if code != exitError || !strings.Contains(errOut, "/proc/hitch/x.db") {
		t.Errorf("unwritable db: exit %d (%s)", code, errOut)
	}
}

// TestKilledRunIsRecoveredAndReconciled runs the real binary, kills it with
// SIGKILL inside a bash tool call, then recovers the run (the call is an
// uncertain effect, exit 3), reconciles it, and sees the run complete.
func TestKilledRunIsRecoveredAndReconciled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a process")
	}
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "hitch")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	files := map[string]string{
		"hitch.yaml": `store: runs.db
models:
  m: {provider: scripted, script: script.yaml}
agents:
  - name: ops
    model: m
    tools: [bash]
    policy: allow_all
    workspace: .
`,
		"script.yaml": `turns:
  - calls: [{name: bash, args: '{"command": "echo charged >> effects.log; sleep 5"}'}]
  - text: finished
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "hitch.yaml")
	cmd := exec.Command(bin, "run", "-c", cfg, "--id", "pay-1", "--lease-ttl", "300ms", "charge the card")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "t1c1 started") {
			break
		}
	}
	// Wait until the body has acted, then kill the process mid-call.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(filepath.Join(dir, "effects.log")); len(b) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the bash body never ran")
		}
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()

	code, out, errOut := cli(t, "recover", "-c", cfg, "--wait", "2s")
	if code != exitOK {
		t.Fatalf("recover: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "t1c1 OUTCOME UNKNOWN") {
		t.Errorf("recover did not report the uncertain call:\n%s", out)
	}
	code, out, _ = cli(t, "runs", "show", "pay-1", "-c", cfg)
	if code != exitOK || !strings.Contains(out, "waiting") || !strings.Contains(out, "uncertain") {
		t.Fatalf("show: exit %d\n%s", code, out)
	}
	code, out, errOut = cli(t, "reconcile", "pay-1", "t1c1", "-c", cfg, "--output", "charged once")
	if code != exitOK || !strings.Contains(out, "answer: finished") {
		t.Fatalf("reconcile: exit %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = cli(t, "reconcile", "pay-1", "t1c1", "-c", cfg, "--output", "again")
	if code != exitRefused {
		t.Errorf("second reconcile: exit %d, want %d (%s)", code, exitRefused, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "effects.log")); strings.Count(string(b), "charged") != 1 {
		t.Errorf("the effect ran %d times", strings.Count(string(b), "charged"))
	}
	// Starting the same id again starts nothing.
	code, _, errOut = cli(t, "run", "-c", cfg, "--id", "pay-1", "charge the card")
	if code != exitOK || !strings.Contains(errOut, "already started, with the same input") {
		t.Errorf("restart with the same id: exit %d (%s)", code, errOut)
	}
}
