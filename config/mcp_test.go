package config

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/mcptest"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/tool/mcp"
)

// testServer is the mcp section's entry for the test binary serving over
// stdio, with its environment's other variables and extra lines of
// settings.
func testServer(t *testing.T, name, env string, extra ...string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := fmt.Sprintf("  - name: %s\n    command: %s\n    env: {%s: \"1\"%s}\n", name, exe, mcptest.Env, env)
	for _, e := range extra {
		s += "    " + e + "\n"
	}
	return s
}

func TestMCPProblemsAllAtOnce(t *testing.T) {
	t.Parallel()
	path := write(t, onDemo(`mcp:
  - name: a__b
    command: srv
    url: http://localhost:1/mcp
  - name: env
    command: srv
    env: {TOKEN: "${HITCH_TEST_UNSET}", PATH: "${PATH}"}
    headers: {Authorization: secret}
    connect_timeout: 20m
    call_timeout: soon
    tools:
      close: {timeout: -1s}
  - name: env
    url: ftp://example.com
agents:
  - name: helper
    model: demo
    tools: [env__read, nope__x, "env__[", read]
    policy: allow_all
`))
	getenv := func(k string) string {
		if k == "PATH" {
			return "/bin"
		}
		return ""
	}
	_, err := Load(path, Options{Getenv: getenv})
	if !IsProblem(err) {
		t.Fatalf("err = %v, want problems", err)
	}
	for _, want := range []string{
		`:5: mcp[0].name: may not contain "__"`,
		`:7: mcp[0].url: give either command or url, not both`,
		`:10: mcp[1].env.TOKEN: refers to ${HITCH_TEST_UNSET}, which is not set`,
		`:11: mcp[1].headers: apply to a url, not a command`,
		`:12: mcp[1].connect_timeout: is 20m0s, allowed 1ms–10m`,
		`:13: mcp[1].call_timeout: "soon" is not a duration`,
		`mcp[1].tools.close.timeout: is -1s, allowed 1ms–24h or infinite`,
		`:16: mcp[2].name: "env" is already the name of mcp[1]`,
		`mcp[2].url: must be an absolute http or https URL`,
		`agents[0].tools[1]: "nope__x" names mcp server "nope", which is not declared under mcp`,
		`agents[0].tools[2]: "env__[" is not a valid glob`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "/bin") {
		t.Errorf("a value leaked into the problems:\n%v", err)
	}
}

func TestMCPServerThatCannotStart(t *testing.T) {
	t.Parallel()
	refuse := filepath.Join(t.TempDir(), "refuse")
	if err := os.WriteFile(refuse, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	path := write(t, map[string]string{"script.yaml": script, "hitch.yaml": `
models:
  demo: {provider: scripted, script: script.yaml}
mcp:
` + testServer(t, "good", "") + testServer(t, "gone", fmt.Sprintf(", %s: %q", mcptest.EnvRefuse, refuse), "connect_timeout: 5s") + `
agents:
  - name: helper
    model: demo
    tools: ["good__*", "gone__*"]
    policy: allow_all
`})
	_, err := Load(path, Options{})
	if err == nil || IsProblem(err) {
		t.Fatalf("err = %v, want a connection error", err)
	}
	if msg := err.Error(); !strings.Contains(msg, `hitch.yaml:8: mcp[1]: connect to mcp server "gone"`) || strings.Contains(msg, `"good"`) {
		t.Errorf("err = %v, want the server that failed, named with its line", err)
	}
}

func TestMCPToolTheServerDoesNotList(t *testing.T) {
	t.Parallel()
	path := write(t, map[string]string{"script.yaml": script, "hitch.yaml": `
models:
  demo: {provider: scripted, script: script.yaml}
mcp:
` + testServer(t, "srv", "") + `
agents:
  - name: helper
    model: demo
    tools: [srv__echo, srv__nope, "srv__late*"]
    policy: allow_all
`})
	_, err := Load(path, Options{})
	if !IsProblem(err) || !strings.Contains(err.Error(), `:12: agents[0].tools[1]: "srv__nope" is not a tool of mcp server "srv"; it lists srv__add_tool, srv__echo, `) {
		t.Fatalf("err = %v", err)
	}
}

// mcpRun is a config whose agent uses every tool of the test server,
// played by the recorded model under key, its journal and clients.
type mcpRun struct {
	path, db string
	key      string
}

func newMCPRun(t *testing.T, key, turns, policy string) mcpRun {
	t.Helper()
	path := write(t, map[string]string{"script.yaml": "turns:\n" + turns, "hitch.yaml": `
store: runs.db
models:
  m: {provider: recorded, model: ` + key + `, script: script.yaml}
mcp:
` + testServer(t, "srv", `, MARK: "${HITCH_TEST_MARK}"`) + `
agents:
  - name: helper
    model: m
    instructions: Use the server.
    tools: ["srv__*"]
    policy: ` + policy + `
    approvers: [{name: ops, secret: s, requirements: ["*"]}]
`})
	return mcpRun{path: path, db: filepath.Join(filepath.Dir(path), "runs.db"), key: key}
}

func (r mcpRun) load(t *testing.T) *Config {
	t.Helper()
	cfg, err := Load(r.path, Options{Getenv: func(k string) string {
		if k == "HITCH_TEST_MARK" {
			return "x"
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// open opens the run's store and a runtime on cfg's agents; a clock ahead
// of real time makes a lease another runtime holds look expired.
func (r mcpRun) open(t *testing.T, cfg *Config, ahead time.Duration) (*hitch.Runtime, store.Store) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), r.db, sqlite.WithClock(func() time.Time { return time.Now().Add(ahead) }))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: cfg.Agents})
	if err != nil {
		t.Fatal(err)
	}
	return rt, st
}

// start loads the config, opens the run's store and a runtime on it, and
// starts run r1 of helper; the caller closes what it returns.
func (r mcpRun) start(t *testing.T, ctx context.Context) (*Config, *hitch.Runtime, store.Store) {
	t.Helper()
	cfg := r.load(t)
	rt, st := r.open(t, cfg, 0)
	a, err := cfg.Agent("helper")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Start(ctx, a, "go", hitch.WithID("r1")); err != nil {
		t.Fatal(err)
	}
	return cfg, rt, st
}

func journal(t *testing.T, st store.Store, runID string) []store.Entry {
	t.Helper()
	es, err := st.JournalRead(context.Background(), store.JournalReadParams{RunID: runID, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func contexts(t *testing.T, es []store.Entry) []hitchtype.Context {
	t.Helper()
	var out []hitchtype.Context
	for _, e := range es {
		if e.Kind == hitchtype.KindContext {
			var c hitchtype.Context
			if err := json.Unmarshal(e.Data, &c); err != nil {
				t.Fatal(err)
			}
			out = append(out, c)
		}
	}
	return out
}

func toolNames(t *testing.T, req []byte) []string {
	t.Helper()
	var r model.Request
	if err := json.Unmarshal(req, &r); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range r.Tools {
		names = append(names, s.Name)
	}
	return names
}

// waitForTool waits until the client lists name.
func waitForTool(ctx context.Context, t *testing.T, c *mcp.Client, name string) {
	t.Helper()
	for {
		snap := c.Snapshot()
		for _, tl := range snap.Tools {
			if tl.Info().Name == name {
				return
			}
		}
		select {
		case <-snap.Changed:
		case <-ctx.Done():
			t.Fatalf("the server never listed %s", name)
		}
	}
}

// TestMCPToolsInARun: an agent of the file calls the server's tools; a
// tool the server adds during turn 1 is offered from turn 2 on, recorded
// in that turn's context; a process that takes over the run while turn 3's
// model call is in flight, with a new server that no longer has the tool,
// sends the same request, rebuilt from the journal, and the call to the
// withdrawn tool gets a clear error.
func TestMCPToolsInARun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	key := "mcp-run"
	held := make(chan struct{})
	recordersMu.Lock()
	holds[key] = func(ctx context.Context, n int) bool {
		if n != 3 {
			return false
		}
		close(held)
		<-ctx.Done()
		return true
	}
	recordersMu.Unlock()
	r := newMCPRun(t, key, fmt.Sprintf(`
  - calls:
      - {name: srv__env, args: '{}'}
      - {name: srv__add_tool, args: '{"name": "late"}'}
      - {name: srv__slow, args: '{"addr": %q}'}
  - calls: [{name: srv__late, args: '{"text": "later"}'}]
  - calls: [{name: srv__late, args: '{"text": "again"}'}]
  - text: done
`, ln.Addr().String()), "allow_all")

	cfg, rt, st := r.start(t, ctx)
	defer cfg.Close()
	defer st.Close()
	defer rt.Close(ctx)
	// slow holds turn 1 open until the server has listed the new tool.
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(conn).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	waitForTool(ctx, t, cfg.MCP("srv"), "srv__late")
	conn.Close()
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("turn 3's model call never came")
	}

	rec := recorded(key)[0]
	sent := rec.requests()
	if len(sent) != 3 {
		t.Fatalf("sent %d requests, want 3", len(sent))
	}
	if names := toolNames(t, sent[0]); slices.Contains(names, "srv__late") || !slices.Contains(names, "srv__echo") {
		t.Errorf("turn 1 offered %v", names)
	}
	for i := 1; i < 3; i++ {
		if names := toolNames(t, sent[i]); !slices.Contains(names, "srv__late") {
			t.Errorf("turn %d did not offer srv__late: %v", i+1, names)
		}
	}
	es := journal(t, st, "r1")
	cs := contexts(t, es)
	if len(cs) != 2 {
		t.Fatalf("%d context entries, want 2 (turn 1, and turn 2 with the new tool): %+v", len(cs), cs)
	}
	if !slices.Contains(cs[1].Tools, "srv__late") || !slices.ContainsFunc(cs[1].Specs, func(s model.ToolSpec) bool {
		return s.Name == "srv__late" && s.Description == "Added later." && strings.Contains(string(s.Schema), `"text"`)
	}) {
		t.Errorf("turn 2's context does not record srv__late: %+v", cs[1])
	}
	for _, want := range []string{`"output":"` + mcptest.Env + `,MARK"`, `"output":"added late"`, `"output":"later"`} {
		if !strings.Contains(entriesText(es), want) {
			t.Errorf("journal lacks %s:\n%s", want, entriesText(es))
		}
	}

	// The process dies: its runner is abandoned without writing, its
	// server stopped. Another process takes the run over: a new config, a
	// new server (which never heard of srv__late), a store clock past the
	// lease.
	dead, kill := context.WithCancel(ctx)
	kill()
	_ = rt.Close(dead)
	if err := cfg.Close(); err != nil {
		t.Fatal(err)
	}
	cfg2 := r.load(t)
	defer cfg2.Close()
	rt2, st2 := r.open(t, cfg2, time.Minute)
	defer st2.Close()
	defer rt2.Close(ctx)
	if n, err := rt2.Recover(ctx); n != 1 || err != nil {
		t.Fatalf("recovered %d runs: %v", n, err)
	}
	run, err := rt2.Await(ctx, "r1")
	if err != nil || run.Status != hitchtype.StatusCompleted || run.Outcome.Answer != "done" {
		t.Fatalf("run: %+v %v", run, err)
	}
	again := recorded(key)[1].requests()
	if len(again) != 2 {
		t.Fatalf("the second process sent %d requests, want 2", len(again))
	}
	if string(again[0]) != string(sent[2]) {
		t.Errorf("the rebuilt request differs:\nbefore %s\nafter  %s", sent[2], again[0])
	}
	if names := toolNames(t, again[1]); slices.Contains(names, "srv__late") {
		t.Errorf("turn 4 offered the withdrawn tool: %v", names)
	}
	es = journal(t, st2, "r1")
	if !strings.Contains(entriesText(es), `the tool \"srv__late\" is no longer available`) {
		t.Errorf("the call to the withdrawn tool did not fail clearly:\n%s", entriesText(es))
	}
	if cs := contexts(t, es); len(cs) != 3 || slices.Contains(cs[2].Tools, "srv__late") {
		t.Errorf("contexts: %+v", cs)
	}
}

func entriesText(es []store.Entry) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "%d %s %s\n", e.Pos, e.Kind, e.Data)
	}
	return b.String()
}

// TestMCPDestructiveToolNeedsApproval: a rule over the server's
// annotations sends a tool it calls destructive to approval, and lets a
// read-only one run.
func TestMCPDestructiveToolNeedsApproval(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := newMCPRun(t, "mcp-approval", `
  - calls:
      - {name: srv__echo, args: '{"text": "hi"}'}
      - {name: srv__pid, args: '{}'}
  - text: done
`, `
      - name: destructive MCP tools
        tools: ["*__*"]
        when: hints.destructive
        verdict: approval
        requirement: ops
        reason: the server says this tool may destroy data
      - tools: ["*"]
        verdict: allow`)
	cfg, rt, st := r.start(t, ctx)
	defer cfg.Close()
	defer st.Close()
	defer rt.Close(ctx)
	run, err := rt.Await(ctx, "r1")
	if err != nil || run.Status != hitchtype.StatusWaiting {
		t.Fatalf("run: %+v %v", run, err)
	}
	pending, _, err := rt.PendingApprovals(ctx, hitch.PendingApprovalsParams{RootID: "r1"})
	if err != nil || len(pending) != 1 || pending[0].Tool != "srv__pid" || pending[0].Requirement != "ops" ||
		pending[0].Reason != "the server says this tool may destroy data" {
		t.Fatalf("pending approvals: %+v %v", pending, err)
	}
	if es := entriesText(journal(t, st, "r1")); !strings.Contains(es, `call.settled {"call":"t1c1","output":"hi"}`) {
		t.Errorf("the read-only tool did not run:\n%s", es)
	}
}
