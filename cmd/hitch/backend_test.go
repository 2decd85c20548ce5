package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// backendFiles is the config both worlds of TestEveryCommandBothWays run:
// scripted agents that end, park on an approval, on an event and on an
// external call.
var backendFiles = map[string]string{
	"hitch.yaml": `store: runs.db
models:
  quick: {provider: scripted, script: quick.yaml}
  gate: {provider: scripted, script: gate.yaml}
  wait: {provider: scripted, script: wait.yaml}
` + shipTool + `agents:
  - {name: quick, model: quick, policy: allow_all}
  - name: gate
    model: gate
    tools: [bash]
    workspace: .
    budget: {model_calls: 10, tool_calls: 5}
    policy:
      - {tools: [bash], verdict: approval, requirement: shell}
    approvers:
      - {name: alice, secret: alice-secret, requirements: [shell]}
  - {name: wait, model: wait, tools: [await_event, ship], policy: allow_all}
  - name: hooked
    model: quick
    policy: allow_all
    hooks:
      - {name: last, point: post_turn, command: [true], priority: 5}
      - {name: first, point: post_turn, command: [true], priority: -1, on_error: fail_open}
      - {name: audit, point: pre_generate, command: [true]}
triggers:
  - {name: hourly, cron: "0 * * * *", agent: quick, input: tick}
sandbox:
  require_isolation: false
server:
  tokens:
    - {name: admin, role: admin, env: T_REMOTE_ADMIN}
    - {name: view, role: viewer, env: T_REMOTE_VIEW}
`,
	"quick.yaml": "turns:\n  - text: quick done\n  - text: quick again\n  - text: quick thrice\n",
	"gate.yaml":  "turns:\n  - calls: [{name: bash, args: '{\"command\": \"echo approved\"}'}]\n  - text: gate done\n",
	"wait.yaml": "turns:\n  - calls: [{name: await_event, args: '{\"name\": \"paid\", \"timeout\": \"30m\"}'}, {name: ship, args: '{\"order\": 7}'}]\n" +
		"  - text: shipped\n",
}

// world is one side of TestEveryCommandBothWays: the flags that point a
// command at it, and what earlier rows learned there.
type world struct {
	name  string
	flags []string
	seen  map[string]string
}

// backendRow is one invocation of a command in both worlds.
type backendRow struct {
	cmd   string // the command's path, without "hitch "
	args  func(w *world) []string
	input string // standard input, for chat
	// local is false for a command that needs the store or agents here:
	// it is run only remotely, and must be refused there (exit 2).
	local bool
	// code is the exit code both worlds must give.
	code int
	// after, when set, reads what a row printed, in each world.
	after func(t *testing.T, w *world, out string)
	// remoteRefused marks a command the server has no route for: the
	// remote world refuses it (exit 2), and only the local one is
	// compared with code.
	remoteRefused bool
	// skipLocal leaves a local-only command unrun here: another test runs
	// it for real (a node, the demo, the benchmark).
	skipLocal bool
	// differs marks a command whose output differs between the worlds by
	// nature (hitch doctor's timings, nodes and disks): only the exit codes
	// are compared.
	differs bool
}

func fixed(a ...string) func(*world) []string { return func(*world) []string { return a } }

// TestEveryCommandBothWays runs every command of the CLI against a local
// store and against a real hitch serve on loopback (--server), from the
// same config and the same history, and checks that both print the same
// and exit with the same code. A command without a row fails the test, so
// a new command cannot ship with only one form.
func TestEveryCommandBothWays(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts hitch serve")
	}
	url, _ := serveFiles(t, backendFiles)
	localDir := writeFiles(t, backendFiles)
	grant := t.TempDir()
	t.Setenv("HITCH_TOKEN", remoteAdmin)
	t.Setenv("HITCH_SERVER", "")
	t.Setenv("HITCH_CREDENTIAL", "alice:alice-secret")
	t.Chdir(t.TempDir()) // no config here: the remote world needs none
	worlds := []*world{
		{name: "local", flags: []string{"-c", filepath.Join(localDir, "hitch.yaml")}, seen: map[string]string{}},
		{name: "remote", flags: []string{"--server", url}, seen: map[string]string{}},
	}
	queued := func(key string) func(*testing.T, *world, string) {
		return func(t *testing.T, w *world, out string) {
			var sent struct {
				MessageID string `json:"message_id"`
			}
			if err := json.Unmarshal([]byte(out), &sent); err != nil || sent.MessageID == "" {
				t.Fatalf("%s: no message id in %q", w.name, out)
			}
			w.seen[key] = sent.MessageID
		}
	}
	rows := []backendRow{
		{cmd: "run", args: fixed("run", "--agent", "quick", "--id", "r1", "hello"), local: true},
		{cmd: "run", args: fixed("--json", "run", "--agent", "quick", "--id", "r1", "hello"), local: true},
		{cmd: "run", args: fixed("run", "--agent", "quick", "--id", "r1", "another input"), local: true, code: exitRefused},
		{cmd: "run", args: fixed("run", "--agent", "nobody", "x"), local: true, code: exitUsage},
		{cmd: "run", args: fixed("run", "--agent", "quick", "--id", "..", "x"), local: true, code: exitUsage},
		// doctor checks this node's deployment, or the server's.
		{cmd: "doctor", args: fixed("doctor"), local: true, differs: true, code: doctorCode()},
		{cmd: "runs list", args: fixed("runs", "list", "--agent", "quick", "--status", "completed"), local: true},
		{cmd: "runs list", args: fixed("--json", "runs", "list", "--limit", "1", "--text", "HELLO"), local: true},
		{cmd: "runs list", args: fixed("runs", "list", "--limit", "0"), local: true, code: exitUsage},
		{cmd: "runs list", args: fixed("runs", "list", "--after", "garbage"), local: true, code: exitUsage},
		{cmd: "runs show", args: fixed("runs", "show", "r1"), local: true},
		{cmd: "runs show", args: fixed("--json", "runs", "show", "r1"), local: true},
		{cmd: "runs show", args: fixed("runs", "show", "nope"), local: true, code: exitNotFound},
		{cmd: "runs events", args: fixed("runs", "events", "r1"), local: true},
		{cmd: "runs events", args: fixed("--json", "runs", "events", "--after", "2", "r1"), local: true},
		{cmd: "runs events", args: fixed("runs", "events", "-f", "r1"), local: true},
		{cmd: "runs events", args: fixed("runs", "events", "nope"), local: true, code: exitNotFound},
		{cmd: "runs fork", args: fixed("runs", "fork", "r1", "--at", "1", "--id", "f1"), local: true},
		{cmd: "runs fork", args: fixed("--json", "runs", "fork", "r1", "--at", "1", "--id", "f1"), local: true},
		{cmd: "runs fork", args: fixed("runs", "fork", "r1", "--at", "2", "--id", "f1"), local: true, code: exitRefused},
		{cmd: "runs fork", args: fixed("runs", "fork", "r1", "--at", "999"), local: true, code: exitUsage},
		{cmd: "runs fork", args: fixed("runs", "fork", "r1"), local: true, code: exitUsage},
		{cmd: "runs fork", args: fixed("runs", "fork", "nope", "--at", "1"), local: true, code: exitNotFound},
		{cmd: "runs fork", args: fixed("--json", "runs", "fork", "r1", "--at", "1", "--id", "f2", "--model", "scripted/quick"), local: true,
			after: forkedFrom("r1", 1)},
		{cmd: "runs fork", args: fixed("runs", "fork", "r1", "--at", "1", "--model", "scripted/nobody"), local: true, code: exitUsage},
		{cmd: "runs show", args: fixed("--json", "runs", "show", "f2"), local: true, after: forkedFrom("r1", 1)},
		{cmd: "runs show", args: fixed("runs", "show", "f2"), local: true, after: func(t *testing.T, w *world, out string) {
			if !strings.Contains(out, "forked   from r1 at 1") {
				t.Errorf("%s: runs show f2 does not say where it was forked from:\n%s", w.name, out)
			}
		}},
		{cmd: "cancel", args: fixed("cancel", "r1"), local: true},
		{cmd: "cancel", args: fixed("cancel", "nope"), local: true, code: exitNotFound},
		{cmd: "reconcile", args: fixed("reconcile", "r1", "t1c1", "--unconfirmed"), local: true, code: exitNotFound},
		{cmd: "reconcile", args: fixed("reconcile", "nope", "t1c1", "--output", "x"), local: true, code: exitNotFound},

		{cmd: "run", args: fixed("run", "--agent", "gate", "--id", "g1", "go"), local: true, code: exitWaiting},
		{cmd: "runs show", args: fixed("runs", "show", "g1"), local: true},
		{cmd: "approvals list", args: fixed("approvals", "list"), local: true},
		{cmd: "approvals list", args: fixed("--json", "approvals", "list", "--run", "g1"), local: true},
		{cmd: "approvals list", args: fixed("approvals", "list", "--run", "nope"), local: true, code: exitNotFound},
		{cmd: "approvals list", args: fixed("approvals", "list", "--after", "garbage"), local: true, code: exitUsage},
		{cmd: "approvals list", args: fixed("approvals", "list", "--limit", "1"), local: true},
		{cmd: "approvals show", args: fixed("approvals", "show", "g1", "t1c1"), local: true},
		{cmd: "approvals show", args: fixed("approvals", "show", "g1", "t9c9"), local: true, code: exitNotFound},
		{cmd: "workspace grant", args: fixed("workspace", "grant", "g1", grant), local: true},
		{cmd: "workspace list", args: fixed("workspace", "list", "g1"), local: true},
		{cmd: "workspace revoke", args: fixed("workspace", "revoke", "g1", grant), local: true},
		{cmd: "workspace revoke", args: fixed("workspace", "revoke", "g1", grant), local: true, code: exitRefused},
		{cmd: "approvals approve", args: fixed("approvals", "approve", "g1", "t1c1", "--credential", "alice:wrong"), local: true, code: exitRefused},
		{cmd: "approvals approve", args: fixed("approvals", "approve", "g1", "t1c1"), local: true},
		{cmd: "approvals approve", args: fixed("approvals", "approve", "g1", "t1c1"), local: true, code: exitRefused},
		{cmd: "runs show", args: fixed("--json", "runs", "show", "g1"), local: true},
		{cmd: "run", args: fixed("run", "--agent", "gate", "--id", "g2", "go"), local: true, code: exitWaiting},
		{cmd: "approvals reject", args: fixed("approvals", "reject", "g2", "t1c1", "--reason", "not today"), local: true},

		{cmd: "run", args: fixed("run", "--agent", "wait", "--id", "w1", "ship once paid"), local: true, code: exitWaiting},
		{cmd: "runs show", args: fixed("--json", "runs", "show", "w1"), local: true},
		{cmd: "wake", args: fixed("wake", "w1", "--event", "lost"), local: true, code: exitRefused},
		{cmd: "wake", args: fixed("wake", "w1", "--event", "paid", "--data", `{"amount": 12}`), local: true, code: exitWaiting},
		{cmd: "calls complete", args: fixed("calls", "complete", "w1", "t1c2", "--output", "shipped as #99"), local: true},
		{cmd: "calls complete", args: fixed("calls", "complete", "w1", "t1c2", "--output", "again"), local: true, code: exitRefused},

		{cmd: "sessions send", args: fixed("sessions", "send", "--agent", "quick", "--key", "k1", "s1", "hi there"), local: true},
		{cmd: "sessions send", args: fixed("--json", "sessions", "send", "--key", "k1", "s1", "hi there"), local: true},
		{cmd: "sessions send", args: fixed("sessions", "send", "s1", ""), local: true, code: exitUsage},
		{cmd: "sessions send", args: fixed("sessions", "send", "--mode", "bogus", "s9", "hi"), local: true, code: exitUsage},
		{cmd: "sessions show", args: fixed("sessions", "show", "s9"), local: true, code: exitNotFound},
		{cmd: "sessions send", args: fixed("sessions", "send", "--agent", "gate", "s2", "go"), local: true},
		{cmd: "sessions send", args: fixed("--json", "sessions", "send", "--detach", "s2", "next one"), local: true,
			after: queued("s2-next")},
		{cmd: "sessions queue", args: fixed("sessions", "queue", "s2"), local: true},
		{cmd: "sessions edit", args: func(w *world) []string { return []string{"sessions", "edit", "s2", w.seen["s2-next"], "the next one"} }, local: true},
		{cmd: "sessions remove", args: func(w *world) []string { return []string{"sessions", "remove", "s2", w.seen["s2-next"]} }, local: true},
		{cmd: "sessions remove", args: func(w *world) []string { return []string{"sessions", "remove", "s2", w.seen["s2-next"]} }, local: true, code: exitRefused},
		{cmd: "sessions interrupt", args: fixed("sessions", "interrupt", "s2"), local: true},
		{cmd: "sessions show", args: fixed("sessions", "show", "s1"), local: true},
		{cmd: "sessions list", args: fixed("sessions", "list"), local: true},
		{cmd: "sessions list", args: fixed("sessions", "list", "--limit", "-1"), local: true, code: exitUsage},
		{cmd: "chat", args: fixed("chat", "--session", "c1", "--agent", "quick"), input: "first\n", local: true},

		{cmd: "triggers list", args: fixed("triggers", "list"), local: true, remoteRefused: true},
		{cmd: "triggers show", args: fixed("triggers", "show", "nope"), local: true, code: exitNotFound, remoteRefused: true},
		{cmd: "triggers pause", args: fixed("triggers", "pause", "nope"), local: true, code: exitNotFound, remoteRefused: true},
		{cmd: "triggers resume", args: fixed("triggers", "resume", "nope"), local: true, code: exitNotFound, remoteRefused: true},
		{cmd: "triggers remove", args: fixed("triggers", "remove", "nope"), local: true, code: exitNotFound, remoteRefused: true},
		{cmd: "agents list", args: fixed("agents", "list"), local: true},
		{cmd: "agents list", args: fixed("--json", "agents", "list"), local: true},
		{cmd: "agents show", args: fixed("agents", "show", "hooked"), local: true, after: hooksInOrder},
		{cmd: "agents show", args: fixed("--json", "agents", "show", "gate"), local: true},
		{cmd: "agents show", args: fixed("agents", "show", "nope"), local: true, code: exitNotFound},
		{cmd: "agents preview", args: fixed("agents", "preview", "quick", "hello", "--instructions", "Be brief."), local: true},
		{cmd: "agents preview", args: fixed("--json", "agents", "preview", "gate", "go"), local: true},
		{cmd: "agents preview", args: fixed("agents", "preview", "quick", "--session", "s1", "and more"), local: true},
		{cmd: "agents preview", args: fixed("agents", "preview", "gate", "--session", "s1"), local: true, code: exitRefused},
		{cmd: "agents preview", args: fixed("agents", "preview", "quick", "--session", "nope"), local: true, code: exitNotFound},
		{cmd: "agents preview", args: fixed("agents", "preview", "nope"), local: true, code: exitNotFound},
		// models check reads the local config, with --server as without.
		{cmd: "models check", args: fixed("models", "check", "-c", filepath.Join(localDir, "hitch.yaml")), local: true},
		// version says what this binary is, with --server as without.
		{cmd: "version", args: fixed("version"), local: true},
		{cmd: "version", args: fixed("--json", "version"), local: true},

		// Detached, the run is queued here (this process drives nothing);
		// a server is a worker, and drives the run it starts at once.
		{cmd: "run", args: fixed("run", "--agent", "quick", "--id", "r2", "--detach", "later"), local: true, differs: true,
			after: func(t *testing.T, w *world, out string) {
				want := map[string]string{"local": "run r2: queued", "remote": "run r2: running"}[w.name]
				if !strings.Contains(out, want) {
					t.Errorf("%s: run --detach printed %q, want %q", w.name, out, want)
				}
			}},
		{cmd: "migrate", args: fixed("migrate", "--dry-run")},
		{cmd: "recover", args: fixed("recover")},
		{cmd: "prune", args: fixed("prune", "--dry-run")},
		{cmd: "replay", args: fixed("replay", "r1")},
		{cmd: "bench", args: fixed("bench"), skipLocal: true},
		{cmd: "chaos", args: fixed("chaos"), skipLocal: true},
		{cmd: "demo", args: fixed("demo"), skipLocal: true},
		{cmd: "worker", args: fixed("worker"), skipLocal: true},
		{cmd: "serve", args: fixed("serve"), skipLocal: true},
		{cmd: "mcp", args: fixed("mcp"), skipLocal: true},
	}

	covered := map[string]bool{}
	for _, row := range rows {
		covered[row.cmd] = true
	}
	commands := leafCommands(newRoot(io.Discard, io.Discard, io.Discard, &redaction{}, io.Discard))
	if len(commands) < 30 {
		t.Fatalf("found %d commands: the walk is broken", len(commands))
	}
	for _, c := range commands {
		if !covered[c] {
			t.Errorf("command %q has no row in TestEveryCommandBothWays: add one for both backends", c)
		}
	}
	for c := range covered {
		if !slices.Contains(commands, c) {
			t.Errorf("row for %q, which is not a command", c)
		}
	}

	for i, row := range rows {
		var outs [2]string
		for j, w := range worlds {
			if w.name == "local" && row.skipLocal {
				continue
			}
			args := append(append([]string{}, row.args(w)...), w.flags...)
			if row.input != "" {
				chatInput = strings.NewReader(row.input)
			}
			code, out, errOut := cli(t, args...)
			chatInput = os.Stdin
			want := row.code
			switch {
			case w.name == "remote" && (!row.local || row.remoteRefused):
				want = exitUsage
				if !strings.Contains(errOut, "cannot work with --server") {
					t.Errorf("row %d %s: %s: a refusal that does not say why: %s", i, w.name, row.cmd, errOut)
				}
			case w.name == "local" && !row.local:
				want = exitOK
			}
			if code != want {
				t.Errorf("row %d %s: hitch %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", i, w.name, strings.Join(args, " "), code, want, out, errOut)
			}
			if row.after != nil {
				row.after(t, w, out)
			}
			outs[j] = normalize(out)
		}
		if row.local && !row.remoteRefused && !row.differs && outs[0] != outs[1] {
			t.Errorf("row %d: hitch %s prints differently:\nlocal:\n%s\nremote:\n%s\n%s", i, strings.Join(row.args(worlds[0]), " "), outs[0], outs[1],
				lineDiff(outs[0], outs[1]))
		}
	}
}

// hooksInOrder checks that agents show lists the hooked agent's hooks in
// the order they run: point by point, lowest priority first.
func hooksInOrder(t *testing.T, w *world, out string) {
	t.Helper()
	var names []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 3 && (f[1] == "pre_generate" || f[1] == "post_turn") {
			names = append(names, f[3])
		}
	}
	if want := []string{"audit", "first", "last"}; !slices.Equal(names, want) {
		t.Errorf("%s: hooks %v, want %v in\n%s", w.name, names, want, out)
	}
}

// forkedFrom checks that the run printed last names its source.
func forkedFrom(run string, pos int64) func(*testing.T, *world, string) {
	return func(t *testing.T, w *world, out string) {
		want := fmt.Sprintf(`"forked_from":{"run":%q,"pos":%d}`, run, pos)
		if !strings.Contains(out, want) {
			t.Errorf("%s: no %s in\n%s", w.name, want, out)
		}
	}
}

// leafCommands lists the path (without "hitch ") of every command that
// does something, the groups' subcommands included.
func leafCommands(root *cobra.Command) []string {
	var out []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.HasSubCommands() {
			out = append(out, strings.TrimPrefix(c.CommandPath(), root.Name()+" "))
			return
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	for _, c := range root.Commands() {
		walk(c)
	}
	slices.Sort(out)
	return out
}

var (
	stampRE = regexp.MustCompile(`\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?`)
	inRE    = regexp.MustCompile(`\(in [0-9hms.]+\)`)
	msgRE   = regexp.MustCompile(`msg_[0-9a-z]+`)
	runRE   = regexp.MustCompile(`(run|sub)_[0-9a-z]+`)
	// A duration in milliseconds may be 0 in one world, and then left out.
	msRE = regexp.MustCompile(`,?"(wall|took)_ms":\d+`)
)

// normalize hides what differs between two worlds by nature: times, and
// ids drawn at random.
func normalize(s string) string {
	s = stampRE.ReplaceAllString(s, "<time>")
	s = inRE.ReplaceAllString(s, "(in <d>)")
	s = msgRE.ReplaceAllString(s, "msg_<id>")
	s = runRE.ReplaceAllString(s, "${1}_<id>")
	return msRE.ReplaceAllString(s, "")
}

// lineDiff names the first lines where a and b part.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var buf bytes.Buffer
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			buf.WriteString("line " + strconv.Itoa(i+1) + ":\n  local:  " + x + "\n  remote: " + y + "\n")
			if buf.Len() > 2000 {
				break
			}
		}
	}
	return buf.String()
}
