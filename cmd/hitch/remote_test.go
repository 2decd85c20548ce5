package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/internal/testproc"
)

const (
	remoteAdmin  = "remote-admin-token-0123"
	remoteViewer = "remote-viewer-token-0123"
)

// serveForTest starts a real hitch serve on a free loopback port with a
// few scripted agents and returns its URL.
func serveForTest(t *testing.T) string {
	t.Helper()
	url, _ := serveFiles(t, map[string]string{
		"hitch.yaml": `store: runs.db
models:
  quick: {provider: scripted, script: quick.yaml}
  gate: {provider: scripted, script: gate.yaml}
agents:
  - {name: quick, model: quick, policy: allow_all}
  - name: gate
    model: gate
    tools: [bash]
    workspace: .
    policy:
      - {tools: [bash], verdict: approval, requirement: shell}
    approvers:
      - {name: alice, secret: alice-secret, requirements: [shell]}
server:
  tokens:
    - {name: admin, role: admin, env: T_REMOTE_ADMIN}
    - {name: view, role: viewer, env: T_REMOTE_VIEW}
`,
		"quick.yaml": "turns:\n  - text: quick done\n  - text: quick again\n  - text: quick thrice\n",
		"gate.yaml":  "turns:\n  - calls: [{name: bash, args: '{\"command\": \"echo approved\"}'}]\n  - text: gate done\n",
	})
	return url
}

// serveFiles starts a real hitch serve on a free loopback port over the
// config files and returns its URL and the config's folder.
func serveFiles(t *testing.T, files map[string]string) (string, string) {
	t.Helper()
	dir := writeFiles(t, files)
	cmd := exec.Command(binary(t), "serve", "-c", filepath.Join(dir, "hitch.yaml"), "--addr", "127.0.0.1:0", "--poll", "50ms")
	testproc.DieWithParent(cmd)
	cmd.Env = append(os.Environ(), "T_REMOTE_ADMIN="+remoteAdmin, "T_REMOTE_VIEW="+remoteViewer, "HITCH_SERVER=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	found := make(chan string, 1)
	go func() {
		defer close(done)
		re := regexp.MustCompile(`serve: listening on (http://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
		_ = cmd.Wait()
	}()
	select {
	case url := <-found:
		return url, dir
	case <-time.After(60 * time.Second):
		t.Fatal("hitch serve did not listen")
	}
	return "", ""
}

func TestRemoteCommands(t *testing.T) {
	url := serveForTest(t)
	t.Setenv("HITCH_TOKEN", remoteAdmin)
	t.Setenv("HITCH_SERVER", "")
	// No config and no store here: everything goes through the server.
	t.Chdir(t.TempDir())
	at := func(args ...string) (int, string, string) {
		t.Helper()
		return cli(t, append([]string{"--server", url}, args...)...)
	}

	code, out, errOut := at("run", "--agent", "quick", "--id", "q1", "hello")
	if code != 0 || !strings.Contains(out, "answer: quick done") || !strings.Contains(out, "ended: completed") {
		t.Fatalf("run: %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = at("run", "--agent", "quick", "--id", "q1", "other input")
	if code != exitRefused {
		t.Fatalf("run with a used id and another input: %d %s", code, out)
	}
	code, out, _ = at("--json", "runs", "show", "q1")
	var shown struct {
		Run   struct{ ID, Status string }
		Calls []any
	}
	if code != 0 || json.Unmarshal([]byte(out), &shown) != nil || shown.Run.ID != "q1" || shown.Run.Status != "completed" || shown.Calls == nil {
		t.Fatalf("runs show --json: %d %s", code, out)
	}
	if code, out, _ = at("runs", "list", "--agent", "quick"); code != 0 || !strings.Contains(out, "q1") || !strings.Contains(out, "default") {
		t.Fatalf("runs list: %d %s", code, out)
	}
	if code, out, _ = at("runs", "list", "--text", "HELLO", "--since", "1h"); code != 0 || !strings.Contains(out, "q1") {
		t.Fatalf("runs list --text --since: %d %s", code, out)
	}
	if code, out, _ = at("runs", "list", "--text", "nothing like it"); code != 0 || strings.Contains(out, "q1") {
		t.Fatalf("runs list --text of nothing: %d %s", code, out)
	}
	if code, _, errOut = at("runs", "list", "--tenant", "b"); code != exitUsage || !strings.Contains(errOut, "token") {
		t.Fatalf("runs list --tenant: %d %s", code, errOut)
	}
	if code, out, _ = at("runs", "events", "q1", "--after", "1"); code != 0 || strings.Contains(out, "   1 ") || !strings.Contains(out, "ended: completed") {
		t.Fatalf("runs events: %d %s", code, out)
	}
	if code, out, _ = at("runs", "events", "-f", "q1"); code != 0 || !strings.Contains(out, "ended: completed") {
		t.Fatalf("runs events -f: %d %s", code, out)
	}

	// Problems map to exit codes by the one table.
	if code, _, errOut = at("runs", "show", "nope"); code != exitNotFound || !strings.Contains(errOut, "nope") {
		t.Fatalf("runs show of a missing run: %d %s", code, errOut)
	}
	if code, _, _ = at("cancel", "nope"); code != exitNotFound {
		t.Fatalf("cancel of a missing run: %d", code)
	}
	t.Setenv("HITCH_TOKEN", "wrong")
	if code, _, errOut = at("runs", "list"); code != exitUsage || !strings.Contains(errOut, "token") {
		t.Fatalf("a wrong token: %d %s", code, errOut)
	}
	t.Setenv("HITCH_TOKEN", remoteViewer)
	if code, _, errOut = at("run", "--agent", "quick", "x"); code != exitRefused || !strings.Contains(errOut, "viewer") {
		t.Fatalf("a viewer starts a run: %d %s", code, errOut)
	}
	t.Setenv("HITCH_TOKEN", remoteAdmin)
	if code, _, errOut = at("run", "--agent", "nobody", "x"); code != exitUsage || !strings.Contains(errOut, "body.agent: is not an agent") {
		t.Fatalf("an unknown agent: %d %s", code, errOut)
	}

	// An approval: the run parks (exit 3); a wrong credential is refused
	// (5); the right one lets it finish.
	if code, out, _ = at("run", "--agent", "gate", "--id", "g1", "go"); code != exitWaiting {
		t.Fatalf("gate run: %d %s", code, out)
	}
	code, out, _ = at("approvals", "list")
	if code != 0 || !strings.Contains(out, "g1") || !strings.Contains(out, "shell") {
		t.Fatalf("approvals list: %d %s", code, out)
	}
	call := strings.Fields(strings.Split(out, "\n")[1])[1]
	t.Setenv("HITCH_CREDENTIAL", "alice:wrong")
	if code, _, errOut = at("approvals", "approve", "g1", call); code != exitRefused {
		t.Fatalf("approve with a wrong secret: %d %s", code, errOut)
	}
	t.Setenv("HITCH_CREDENTIAL", "alice:alice-secret")
	if code, out, errOut = at("approvals", "approve", "g1", call); code != 0 || !strings.Contains(out, "answer: gate done") {
		t.Fatalf("approve: %d %s %s", code, out, errOut)
	}
	if code, _, _ = at("approvals", "approve", "g1", call); code != exitRefused && code != exitNotFound {
		t.Fatalf("approve twice: %d", code)
	}
	if code, out, _ = at("cancel", "g1"); code != 0 || !strings.Contains(out, "completed") {
		t.Fatalf("cancel of an ended run: %d %s", code, out)
	}
	if code, out, _ = at("workspace", "list", "g1"); code != 0 || !strings.Contains(out, "no roots") {
		t.Fatalf("workspace list: %d %s", code, out)
	}

	// Sessions.
	code, out, errOut = at("sessions", "send", "--agent", "quick", "--key", "k1", "chat", "hi there")
	if code != 0 || !strings.Contains(out, "session chat") || !strings.Contains(out, "answer:") {
		t.Fatalf("sessions send: %d %s %s", code, out, errOut)
	}
	code, out, _ = at("--json", "sessions", "send", "--key", "k1", "chat", "hi there")
	if code != 0 || !strings.Contains(out, `"duplicate":true`) {
		t.Fatalf("retried send: %d %s", code, out)
	}
	if code, out, _ = at("sessions", "show", "chat"); code != 0 || !strings.Contains(out, "1. msg_") || strings.Contains(out, "2. msg_") {
		t.Fatalf("sessions show: %d %s", code, out)
	}
	if code, out, _ = at("sessions", "list"); code != 0 || !strings.Contains(out, "chat") {
		t.Fatalf("sessions list: %d %s", code, out)
	}
	if code, _, _ = at("sessions", "show", "nope"); code != exitNotFound {
		t.Fatalf("sessions show of a missing session: %d", code)
	}
	if code, _, _ = at("sessions", "queue", "chat"); code != 0 {
		t.Fatalf("sessions queue: %d", code)
	}

	// chat follows its submissions through their runs' streams.
	chatInput = strings.NewReader("first\nsecond\n")
	t.Cleanup(func() { chatInput = os.Stdin })
	code, out, errOut = at("chat", "--session", "rc", "--agent", "quick")
	if code != 0 || !strings.Contains(out, "session rc") || !strings.Contains(out, "agent: quick done") || !strings.Contains(out, "agent: quick again") {
		t.Fatalf("chat: %d\n%s\n%s", code, out, errOut)
	}

	// Commands that need the store here refuse, with the usage code.
	for _, args := range [][]string{{"worker"}, {"migrate"}, {"recover"}, {"demo"}, {"bench"}, {"prune"}} {
		code, _, errOut := at(args...)
		if code != exitUsage || !strings.Contains(errOut, "cannot work with --server") {
			t.Errorf("%v with --server: %d %s", args, code, errOut)
		}
	}
	// HITCH_SERVER does what --server does.
	t.Setenv("HITCH_SERVER", url)
	if code, out, _ := cli(t, "runs", "show", "q1"); code != 0 || !strings.Contains(out, "q1") {
		t.Fatalf("HITCH_SERVER: %d %s", code, out)
	}
	if code, _, _ := cli(t, "--server", "localhost:1", "runs", "list"); code != exitUsage {
		t.Fatalf("a server URL without a scheme: %d", code)
	}
}

// TestProblemExitTableIsDocumented keeps the table of docs/cli.md equal to
// api.Problems, the one table the CLI maps problems by.
func TestProblemExitTableIsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, c := range api.Problems {
		name := "`" + strings.TrimPrefix(c.Type, "/v1/problems/") + "`"
		found := false
		for _, line := range strings.Split(doc, "\n") {
			if strings.HasPrefix(line, "| ") && strings.Contains(line, name) && strings.HasSuffix(line, fmt.Sprintf("| %d |", c.Exit)) {
				found = true
			}
		}
		if !found {
			t.Errorf("docs/cli.md has no row giving %s exit code %d", name, c.Exit)
		}
	}
}
