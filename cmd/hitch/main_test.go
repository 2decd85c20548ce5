package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/internal/testproc"
	"github.com/hitch-dev/hitch/store/sqlite"
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
		"hitch.yaml": bashAgent("runs.db", "ops") + prodApprovals + `      - {name: carol, secret_env: HITCH_TEST_CAROL_SECRET_UNSET, requirements: [prod]}
      - {name: dave, secret: d-secret, requirements: ["*"]}
`,
		"script.yaml": "turns:\n  - calls: [{name: bash, args: '{\"command\": \"echo deployed >> effects.log\"}'}]\n  - text: done\n",
	}
	writeFilesIn(t, dir, files)
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
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
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
	testproc.Heavy(t, "builds and kills a process")
	bin := binary(t)
	dir, cfg := bashConfig(t, "echo charged >> effects.log; sleep 5")
	cmd := exec.Command(bin, "run", "-c", cfg, "--id", "pay-1", "--lease-ttl", "300ms", "charge the card")
	testproc.DieWithParent(cmd)
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
	waitForFile(t, filepath.Join(dir, "effects.log"), "", 10*time.Second)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()

	code, out, errOut := cli(t, "recover", "-c", cfg, "--wait", "2s")
	if code != exitWaiting {
		t.Fatalf("recover of a run that parks: exit %d, want %d\n%s\n%s", code, exitWaiting, out, errOut)
	}
	if !strings.Contains(out, "t1c1 OUTCOME UNKNOWN") {
		t.Errorf("recover did not report the uncertain call:\n%s", out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line != "" && !strings.HasPrefix(line, "pay-1 ") && !strings.HasPrefix(line, "run pay-1") && !strings.HasPrefix(line, "the run is parked") {
			t.Errorf("recover prints a line without its run id: %q", line)
		}
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
	code, _, errOut = cli(t, "run", "-c", cfg, "--id", "pay-1", "charge it twice")
	if code != exitRefused || strings.Contains(errOut, "following it") {
		t.Errorf("restart with another input: exit %d, want %d and no word of following it (%s)", code, exitRefused, errOut)
	}
}

// writeFiles writes files into a new folder and returns the folder.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	writeFilesIn(t, dir, files)
	return dir
}

// scriptedYAML is a config of store with a scripted model, m, reading
// script.yaml, and one agent, a YAML flow mapping.
func scriptedYAML(store, agent string) string {
	return "store: " + store + "\nmodels:\n  m: {provider: scripted, script: script.yaml}\nagents:\n  - " + agent + "\n"
}

// bashAgent is a config of store with one agent, name, that runs bash in
// its folder on the scripted model m (script.yaml); a test adds the
// agent's policy, indented as its keys are.
func bashAgent(store, name string) string {
	return scriptedYAML(store, "name: "+name+"\n    model: m\n    tools: [bash]\n    workspace: .")
}

// bashConfig writes a config whose agent ops, allowed everything, makes
// one bash call of command and then answers "finished"; it returns the
// config's folder and path.
func bashConfig(t *testing.T, command string) (dir, cfg string) {
	t.Helper()
	return writeConfig(t, bashAgent("runs.db", "ops")+"    policy: allow_all\n",
		"turns:\n  - calls: [{name: bash, args: '{\"command\": \""+command+"\"}'}]\n  - text: finished\n")
}

// shipTool is a config's external tools: ship, whose result the warehouse
// gives from outside within 2 hours.
const shipTool = `external_tools:
  - name: ship
    description: Ships an order; the warehouse answers.
    parameters: {type: object, properties: {order: {type: integer}}}
    timeout: 2h
`

// prodApprovals is an agent's policy (for bashAgent) that asks approval
// "prod" for every bash call, and the head of its approvers list.
const prodApprovals = `    policy:
      - {tools: [bash], verdict: approval, requirement: prod, reason: touches production}
    approvers:
`

// writeFilesIn writes each file, by name, into dir.
func writeFilesIn(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// scriptedConfig is a config with one agent on a scripted model.
func scriptedConfig(t *testing.T, script string) (dir, cfg string) {
	t.Helper()
	return writeConfig(t, scriptedYAML("runs.db", "{name: ops, model: m, tools: [read], policy: allow_all, workspace: .}"), script)
}

// writeConfig writes a config and the script of its scripted models into
// a new folder, and returns the folder and the config's path.
func writeConfig(t *testing.T, config, script string) (dir, cfg string) {
	t.Helper()
	dir = writeFiles(t, map[string]string{"hitch.yaml": config, "script.yaml": script})
	return dir, filepath.Join(dir, "hitch.yaml")
}

// cliWithin runs the CLI bounded by d, for commands that would otherwise
// keep running.
func cliWithin(t *testing.T, d time.Duration, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	code := run(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestBadFlagsAndArgumentsExitTwo(t *testing.T) {
	t.Parallel()
	dir, cfg := scriptedConfig(t, "turns:\n  - text: hi\n")
	db := filepath.Join(dir, "runs.db")
	if code, out, errOut := cli(t, "run", "-c", cfg, "--id", "seed", "hi"); code != exitOK {
		t.Fatalf("seed run: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string // in the error
	}{
		{[]string{"nosuch"}, `unknown command "nosuch"`},
		{[]string{"runs", "nosuch", "--db", db}, `unknown command "nosuch" for "hitch runs"`},
		{[]string{"run", "-c", dir, "hi"}, "is a directory"},
		{[]string{"worker", "-c", cfg, "--lease-ttl", "-1s"}, "--lease-ttl"},
		{[]string{"worker", "-c", cfg, "--lease-ttl", "0"}, "--lease-ttl"},
		{[]string{"worker", "-c", cfg, "--poll", "0"}, "--poll"},
		{[]string{"runs", "list", "--db", db, "--limit", "-1"}, "--limit"},
		{[]string{"runs", "list", "--db", db, "--limit", "1001"}, "--limit"},
		{[]string{"runs", "events", "seed", "--db", db, "--after", "-5"}, "--after"},
		{[]string{"run", "-c", cfg, "--id", strings.Repeat("a", 10000), "hi"}, "--id"},
		{[]string{"run", "-c", cfg, "--id", "a\nb", "hi"}, "--id"},
		{[]string{"run", "-c", cfg, "--id", "a\x1b[31mb", "hi"}, "--id"},
		{[]string{"run", "-c", cfg, "--id", "", "hi"}, "--id"},
		{[]string{"workspace", "grant", "seed", filepath.Join(dir, "missing"), "-c", cfg}, "missing"},
		{[]string{"workspace", "grant", "seed", "relative/dir", "-c", cfg}, "absolute"},
		{[]string{"run", "-c", cfg, ""}, "PROMPT"},
		{[]string{"run", "-c", cfg, " \n\t"}, "PROMPT"},
	} {
		code, out, errOut := cliWithin(t, 5*time.Second, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, want %d with %q\n%s%s", tc.args, code, exitUsage, tc.want, out, errOut)
		}
		if strings.Contains(errOut, "\x1b") || strings.Contains(errOut, strings.Repeat("a", 200)) {
			t.Errorf("%q: the error repeats the raw value: %q", tc.args, errOut)
		}
	}
	// None of them started a run.
	code, out, _ := cli(t, "runs", "list", "--db", db, "--json")
	if code != exitOK || strings.Count(out, `"id"`) != 1 {
		t.Errorf("runs list after refused starts: exit %d\n%s", code, out)
	}
}

// binary builds the command once per test process and returns its path.
func binary(t *testing.T) string {
	t.Helper()
	return testproc.Build(t, ".")
}

func TestMain(m *testing.M) { os.Exit(testproc.Main(m)) }

// inDir runs the real binary with dir as its working directory.
func inDir(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	bin := binary(t) // built once, before the run's own time starts
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	testproc.DieWithParent(cmd)
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	code := exitCode(t, cmd.Run())
	return code, out.String(), errOut.String()
}

// exitCode is the exit code of a command that ran: 0, or its
// *exec.ExitError's; any other error ends t.
func exitCode(t *testing.T, err error) int {
	t.Helper()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0
}

func TestMissingOrBrokenConfigIsAnError(t *testing.T) {
	testproc.Heavy(t, "builds the binary")
	empty := t.TempDir()
	for _, args := range [][]string{{"runs", "list"}, {"run", "hi"}, {"runs", "show", "x"}, {"approvals", "list"}, {"recover"}} {
		code, out, errOut := inDir(t, empty, args...)
		if code != exitUsage || !strings.Contains(errOut, "hitch demo --dir .") {
			t.Errorf("%v with no config: exit %d, want %d and how to make one\n%s%s", args, code, exitUsage, out, errOut)
		}
	}
	if names, _ := os.ReadDir(empty); len(names) != 0 {
		t.Errorf("commands without a config left files behind: %v", names)
	}

	// A config naming another store: a broken one is an error, not a
	// reason to read ./hitch.db.
	dir, _ := scriptedConfig(t, "turns:\n  - text: hi\n")
	if code, out, errOut := inDir(t, dir, "run", "--id", "r1", "hi"); code != exitOK {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs.db")); err != nil {
		t.Fatalf("the run is not in the config's store: %v", err)
	}
	if code, out, _ := inDir(t, dir, "runs", "list"); code != exitOK || !strings.Contains(out, "r1") {
		t.Fatalf("runs list: exit %d\n%s", code, out)
	}
	cfg, _ := os.ReadFile(filepath.Join(dir, "hitch.yaml"))
	if err := os.WriteFile(filepath.Join(dir, "hitch.yaml"), append(cfg, "bogus: 1\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"runs", "list"}, {"runs", "show", "r1"}, {"runs", "events", "r1"}} {
		code, out, errOut := inDir(t, dir, args...)
		if code != exitUsage || !strings.Contains(errOut, "bogus") {
			t.Errorf("%v with a broken config: exit %d, want %d naming the problem\n%s%s", args, code, exitUsage, out, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "hitch.db")); err == nil {
		t.Error("a command created hitch.db beside a config that names runs.db")
	}
	// --db needs no config.
	if code, out, errOut := inDir(t, empty, "runs", "list", "--db", filepath.Join(dir, "runs.db")); code != exitOK || !strings.Contains(out, "r1") {
		t.Errorf("runs list --db: exit %d\n%s%s", code, out, errOut)
	}
	// A read command never creates a store.
	if code, _, _ := inDir(t, empty, "runs", "list", "--db", "new.db"); code != exitError {
		t.Errorf("runs list of a missing store: exit %d, want %d", code, exitError)
	}
	if _, err := os.Stat(filepath.Join(empty, "new.db")); err == nil {
		t.Error("runs list created the store it was asked to read")
	}
}

func TestCompletionWithoutAnswerIsNotSuccess(t *testing.T) {
	t.Parallel()
	_, cfg := writeConfig(t, scriptedYAML("runs.db", "{name: ops, model: m, tools: [read], policy: allow_all, workspace: ., limits: {model_attempts: 2}}"),
		"turns:\n  - calls: [{name: read, args: '{\"path\": \"script.yaml\"}'}]\nrepeat: true\n")
	code, out, errOut := cli(t, "run", "-c", cfg, "--id", "loop", "go round")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitNoAnswer || !strings.Contains(lines[len(lines)-1], "max_turns") {
		t.Fatalf("run: exit %d, want %d with the stop reason last\n%s%s", code, exitNoAnswer, out, errOut)
	}
	if strings.Contains(out, "turn 2, attempt 2") || !strings.Contains(out, "turn 2 (model attempt 2 of this run)") {
		t.Errorf("attempts are not said to count per run:\n%s", out)
	}
	code, out, _ = cli(t, "run", "-c", cfg, "--id", "loop", "go round", "--json")
	if code != exitNoAnswer || !strings.Contains(out, `"reason":"max_turns"`) {
		t.Errorf("repeated run --json: exit %d\n%s", code, out)
	}
}

// evil is text that would drive a terminal if printed raw: colours, a
// window title (OSC 0), a hyperlink (OSC 8), a C1 control sequence
// introducer, carriage return, backspace, bell and a bidi override.
const evil = "\x1b[31mred\x1b[0m \x1b]0;pwned\x07 \x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\ \u009b2J \rover\bx\a \u202eabc"

func TestHumanOutputEscapesControlCharacters(t *testing.T) {
	t.Parallel()
	answer := "first line\n\tindented " + evil
	dir := writeFiles(t, map[string]string{
		"hitch.yaml": scriptedYAML("runs.db", "{name: ops, model: m, tools: [read], policy: allow_all, workspace: .}"),
		"script.yaml": "turns:\n  - text: " + strconv.Quote("look "+evil) + "\n    calls: [{name: read, args: '{\"path\": \"evil.txt\"}'}]\n" +
			"  - text: " + strconv.Quote(answer) + "\n",
		"evil.txt": "file says " + evil + " \xff\xfe bytes\n",
	})
	cfg := filepath.Join(dir, "hitch.yaml")
	raw := func(name, s string, shown ...bool) {
		t.Helper()
		for _, c := range []string{"\x1b", "\x07", "\x08", "\r", "\u009b", "\u202e", "\xff"} {
			if strings.Contains(s, c) {
				t.Errorf("%s prints %q raw:\n%s", name, c, s)
			}
		}
		if len(shown) == 0 && !strings.Contains(s, `\x1b]0;pwned\x07`) {
			t.Errorf("%s does not show the escape sequence escaped:\n%s", name, s)
		}
	}
	code, out, errOut := cli(t, "run", "-c", cfg, "--id", "e1", "go")
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	raw("run", out)
	if !strings.Contains(out, "answer: first line\n\tindented ") {
		t.Errorf("the answer's newline and tab are not kept as layout:\n%s", out)
	}
	for _, args := range [][]string{{"runs", "show", "e1"}, {"runs", "events", "e1"}} {
		code, out, _ := cli(t, append(args, "-c", cfg)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d", args, code)
		}
		raw(args[1], out)
	}
	// An id from the command line is escaped in errors too.
	_, _, errOut = cli(t, "runs", "show", "x\x1b]0;pwned\x07", "-c", cfg)
	raw("an error", errOut, false)

	// --json keeps the exact text.
	code, out, _ = cli(t, "runs", "show", "e1", "-c", cfg, "--json")
	var shown struct {
		Run struct {
			Outcome struct{ Answer string }
		}
	}
	if code != exitOK || json.Unmarshal([]byte(out), &shown) != nil || shown.Run.Outcome.Answer != answer {
		t.Errorf("runs show --json: exit %d, answer %q, want %q", code, shown.Run.Outcome.Answer, answer)
	}
}

func TestEscape(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain ünïcode 日本": "plain ünïcode 日本",
		"a\nb\tc":          "a\nb\tc",
		"\x1b[2J":          `\x1b[2J`,
		"\u009b\u202e":     `\u009b\u202e`,
		"\xff\r\x7f":       `\xff\r\x7f`,
	} {
		if got := escape(in, true); got != want {
			t.Errorf("escape(%q) = %q, want %q", in, got, want)
		}
	}
	if got := printable("a\nb"); got != `a\nb` {
		t.Errorf("printable keeps a newline: %q", got)
	}
	// A character split across writes is held back, not mangled.
	var b bytes.Buffer
	term := &terminal{w: &b}
	s := "日本\x1b"
	for i := range len(s) {
		term.Write([]byte{s[i]})
	}
	term.flush()
	if b.String() != `日本\x1b` {
		t.Errorf("split writes: %q", b.String())
	}
}

func TestParentAndChildLinesNameTheirRun(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{
		"hitch.yaml": `store: runs.db
models:
  boss: {provider: scripted, script: boss.yaml}
  kid: {provider: scripted, script: kid.yaml}
agents:
  - {name: boss, model: boss, policy: allow_all, sub_agents: [researcher]}
  - {name: researcher, description: Finds facts., model: kid, policy: allow_all}
`,
		"boss.yaml": "turns:\n  - calls: [{name: researcher, args: '{\"prompt\": \"find it\"}'}]\n  - text: it is 42\n",
		"kid.yaml":  "turns:\n  - text: 42\n",
	})
	code, out, errOut := cli(t, "run", "-c", filepath.Join(dir, "hitch.yaml"), "--agent", "boss", "--id", "fam", "find the answer")
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	_, list, _ := cli(t, "runs", "list", "-c", filepath.Join(dir, "hitch.yaml"), "--json")
	var kid string
	for _, l := range strings.Split(strings.TrimSpace(list), "\n") {
		var r struct {
			ID       string `json:"id"`
			ParentID string `json:"parent_id"`
		}
		if json.Unmarshal([]byte(l), &r) == nil && r.ParentID == "fam" {
			kid = r.ID
		}
	}
	if kid == "" {
		t.Fatalf("no child run:\n%s", list)
	}
	kids := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, kid+" ") {
			kids++
		}
		if strings.Contains(line, "reply: 42") && !strings.HasPrefix(line, kid+" ") {
			t.Errorf("a child's line does not name its run %s: %q", kid, line)
		}
	}
	if kids < 3 {
		t.Errorf("%d child lines name the child:\n%s", kids, out)
	}
}

func TestJSONOutput(t *testing.T) {
	t.Parallel()
	_, cfg := writeConfig(t, "store: runs.db\nprices: {scripted/script: {input: 1, output: 2}}\nmodels:\n  m: {provider: scripted, script: script.yaml}\n"+
		"agents:\n  - {name: ops, model: m, policy: allow_all, budget: {tokens: 100000, usd: 2.5}}\n",
		"turns:\n  - text: done\n")
	last := func(out string) map[string]any {
		t.Helper()
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var v map[string]any
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &v); err != nil {
			t.Fatalf("last line is not JSON: %v\n%s", err, out)
		}
		return v
	}
	code, out, _ := cli(t, "run", "-c", cfg, "--id", "j1", "go", "--json")
	if v := last(out); code != exitOK || v["created"] != true {
		t.Errorf("first start: exit %d, %v", code, v)
	}
	code, out, _ = cli(t, "run", "-c", cfg, "--id", "j1", "go", "--json")
	if v := last(out); code != exitOK || v["created"] != false || v["same_input"] != true || v["status"] != "completed" {
		t.Errorf("repeated start: exit %d, %v", code, v)
	}
	code, out, _ = cli(t, "run", "-c", cfg, "--id", "j1", "another", "--json")
	if v := last(out); code != exitRefused || v["created"] != false || v["same_input"] != false {
		t.Errorf("start with another input: exit %d, %v", code, v)
	}

	code, out, _ = cli(t, "runs", "show", "j1", "-c", cfg, "--json")
	v := last(out)
	if code != exitOK {
		t.Fatalf("runs show: exit %d", code)
	}
	fam, _ := v["family"].(map[string]any)
	if fam == nil || fam["runs"] != 1.0 || fam["usage"] == nil {
		t.Errorf("runs show --json lacks family totals: %s", out)
	}
	bud, _ := v["budget"].(map[string]any)
	if lim, _ := bud["limits"].(map[string]any); lim == nil || lim["tokens"] != 100000.0 || lim["usd"] != 2.5 || bud["used"] == nil {
		t.Errorf("runs show --json lacks the budget: %s", out)
	}
	if calls, ok := v["calls"].([]any); !ok || len(calls) != 0 {
		t.Errorf("runs show --json: calls = %#v, want []", v["calls"])
	}
	code, out, _ = cli(t, "workspace", "list", "j1", "-c", cfg, "--json")
	if code != exitOK || strings.TrimSpace(out) != "[]" {
		t.Errorf("workspace list --json of none: exit %d, %q", code, out)
	}
}

func TestOnlyStartingCommandsCreateTheStore(t *testing.T) {
	t.Parallel()
	dir, cfg := scriptedConfig(t, "turns:\n  - text: hi\n")
	for _, args := range [][]string{
		{"approvals", "list"}, {"approvals", "show", "r", "t1c1"}, {"cancel", "r"}, {"recover"},
		{"workspace", "list", "r"}, {"reconcile", "r", "t1c1", "--unconfirmed"},
	} {
		code, out, errOut := cli(t, append(args, "-c", cfg)...)
		if code != exitError || !strings.Contains(errOut, "no run has been started") {
			t.Errorf("%v without a store: exit %d, want %d\n%s%s", args, code, exitError, out, errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, "runs.db")); err == nil {
			t.Fatalf("%v created the store", args)
		}
	}
	if code, _, _ := cli(t, "run", "-c", cfg, "hi"); code != exitOK {
		t.Fatalf("run: exit %d", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs.db")); err != nil {
		t.Errorf("run did not create the store: %v", err)
	}
}

// TestReadCommandsOnAnImmutableStore reads runs from a store file that
// cannot be written at all (immutable, which binds root too): the read
// commands open it read-only, so they work.
func TestReadCommandsOnAnImmutableStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if code, out, errOut := cli(t, "demo", "--dir", dir); code != exitOK {
		t.Fatalf("demo: exit %d\n%s%s", code, out, errOut)
	}
	db := filepath.Join(dir, "demo.db")
	if out, err := exec.Command("chattr", "+i", db).CombinedOutput(); err != nil {
		t.Skipf("cannot make the store immutable here (chattr +i: %v %s)", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("chattr", "-i", db).Run() })
	code, out, errOut := cli(t, "runs", "list", "--db", db, "--json")
	if code != exitOK || !strings.Contains(out, `"completed"`) {
		t.Fatalf("runs list: exit %d\n%s%s", code, out, errOut)
	}
	var run struct{ ID string }
	_ = json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &run)
	for _, args := range [][]string{{"runs", "show", run.ID}, {"runs", "events", run.ID}} {
		if code, out, errOut := cli(t, append(args, "--db", db)...); code != exitOK {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
}

// waitForFile waits, at most within, until the file at path (written by
// another process) holds want, or anything when want is empty.
func waitForFile(t *testing.T, path, want string, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(path); len(b) > 0 && strings.Contains(string(b), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, %s does not hold %q", within, path, want)
		}
	}
}
