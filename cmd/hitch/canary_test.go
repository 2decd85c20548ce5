package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitch-dev/hitch/internal/mcptest"
	"github.com/hitch-dev/hitch/internal/otlptest"
	"github.com/hitch-dev/hitch/internal/pgtest"
	"github.com/hitch-dev/hitch/internal/testproc"
)

// The secret canary over every way a caller's text enters: one hitch serve
// and its store, and the declared secret (gh) in every input each surface
// takes — a run's input and instructions, a wake's data, a completed
// call's output, a reconciliation's output, an approval's reason, a
// session's metadata and its messages in every mode, an edit — sent over
// the HTTP API, the CLI with --server and on the store directly, the
// console's forms, and MCP over stdio (hitch mcp) and HTTP (/mcp). The
// secret then lands in the journal as its marker, and no spelling of it,
// of the model key, the server's token or the approver's secret is in the
// store read raw (SQLite, and a PostgreSQL dump when HITCH_TEST_POSTGRES is
// set), any API answer or stream, the console's pages, an MCP answer or
// the CLI's output.
func TestSecretCanaryOverEveryInput(t *testing.T) {
	testproc.Heavy(t, "builds the binary and starts servers")
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		inputsCanary(t, "", "")
	})
	if base := os.Getenv("HITCH_TEST_POSTGRES"); base != "" {
		t.Run("postgres", func(t *testing.T) {
			t.Parallel()
			inputsCanary(t, base, fmt.Sprintf("canary_%d", time.Now().UnixNano()))
		})
	}
}

// inputsCanaryFiles: an agent for each way a run parks on a caller (an
// awaited event, an external call, an uncertain call, an approval) and a
// chat agent for sessions, whose first submission parks on an event so
// that later messages queue behind it.
var inputsCanaryFiles = map[string]string{
	"hitch.yaml": `
secrets:
  gh: {env: HITCH_CANARY_TOKEN}
models:
  wait: {provider: scripted, script: wait.yaml, api_key_env: HITCH_CANARY_KEY}
  ship: {provider: scripted, script: ship.yaml}
  unsure: {provider: scripted, script: unsure.yaml}
  pay: {provider: scripted, script: pay.yaml}
  chat: {provider: scripted, script: chat.yaml}
external_tools:
  - {name: ship, description: Ships; the warehouse answers later., parameters: {type: object}}
agents:
  - {name: woken, model: wait, tools: [await_event], policy: allow_all}
  - {name: shipper, model: ship, tools: [ship], policy: allow_all}
  - name: unsure
    model: unsure
    tools: [bash]
    workspace: .
    policy: allow_all
  - name: payer
    model: pay
    tools: [bash]
    workspace: .
    policy:
      - {tools: [bash], verdict: approval, requirement: pay}
    approvers:
      - {name: ann, secret_env: HITCH_ANN_SECRET, requirements: [pay]}
  - {name: chat, model: chat, tools: [await_event], policy: allow_all}
server:
  tokens:
    - {name: admin, role: admin, env: HITCH_TOKEN_ADM}
sandbox: {require_isolation: false}
`,
	"wait.yaml":   "turns:\n  - calls: [{name: await_event, args: '{\"name\":\"deploy.done\",\"timeout\":\"1h\"}'}]\n  - text: over\n",
	"ship.yaml":   "turns:\n  - calls: [{name: ship, args: '{}'}]\n  - text: over\n",
	"unsure.yaml": "turns:\n  - calls: [{name: bash, args: '{\"command\":\"mktemp started.XXXXXX; sleep 60\"}'}]\n  - text: over\n",
	"pay.yaml":    "turns:\n  - calls: [{name: bash, args: '{\"command\":\"echo paid\"}'}]\n  - text: over\n",
	"chat.yaml":   "repeat: true\nturns:\n  - calls: [{name: await_event, args: '{\"name\":\"deploy.done\",\"timeout\":\"1h\"}'}]\n  - text: done\n",
}

// inputsCanaryEnv is every process's environment: the canaries are the
// tool's secret, the model key, the server's token and the approver's
// secret.
func inputsCanaryEnv(extra ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "HITCH_CANARY_KEY=" + keyCanary, "HITCH_CANARY_TOKEN=" + tokenCanary,
		"HITCH_TOKEN_ADM=" + canaryAdmin, "HITCH_ANN_SECRET=" + credentialCanary, "HITCH_CREDENTIAL=ann:" + credentialCanary,
		"HITCH_SERVER="}, extra...)
}

// inputsCanary runs the scenario on a SQLite store in the config's folder,
// or on schema of the PostgreSQL database at base.
func inputsCanary(t *testing.T, base, schema string) {
	dir := writeFiles(t, inputsCanaryFiles)
	cfg := filepath.Join(dir, "hitch.yaml")
	db := filepath.Join(dir, "hitch.db")
	if base != "" {
		db = pgtest.WithParam(base, "schema", schema)
		pgtest.DropAtEnd(t, base, schema)
	}
	const c = tokenCanary
	const marker = "[secret:gh]"
	var seen strings.Builder // everything any surface answered
	var seenMu sync.Mutex
	saw := func(what string, b []byte) {
		seenMu.Lock()
		defer seenMu.Unlock()
		fmt.Fprintf(&seen, "\n== %s\n%s", what, b)
	}

	// The CLI: on the store directly, and as a client of the server.
	hitchCmd := func(token string, args ...string) (string, error) {
		t.Helper()
		bin := binary(t) // built once, outside the command's time
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		testproc.DieWithParent(cmd)
		cmd.Dir = dir
		cmd.Env = inputsCanaryEnv("HOME="+dir, "HITCH_TOKEN="+token)
		out, err := cmd.CombinedOutput()
		saw("a hitch command's output", out) // not its arguments, which carry the secret on purpose
		return string(out), err
	}
	if base != "" {
		if out, err := hitchCmd("", "migrate", "-c", cfg, "--db", db); err != nil {
			t.Fatalf("migrate: %v\n%s", err, out)
		}
	}
	local := func(args ...string) string {
		t.Helper()
		out, err := hitchCmd("", append([]string{"-c", cfg, "--db", db}, args...)...)
		if err != nil {
			t.Fatalf("hitch %v: %v\n%s", args, err, out)
		}
		return out
	}

	// A call is uncertain only when its process died while it ran: a
	// worker starts each surface's unsure run's command and is killed; the
	// server, once their leases lapse, finds them uncertain.
	for _, p := range []string{"api", "srv", "loc", "web"} {
		local("run", "--detach", "--agent", "unsure", "--id", p+"-unsure", "--instructions", "answer as "+c, "go "+c)
	}
	inputsCanaryKillWorker(t, dir, cfg, db, 4)

	addr, stop := inputsCanaryServe(t, dir, cfg, db, saw)
	remote := func(args ...string) string {
		t.Helper()
		out, err := hitchCmd(canaryAdmin, append([]string{"--server", addr}, args...)...)
		if err != nil {
			t.Fatalf("hitch --server %v: %v\n%s", args, err, out)
		}
		return out
	}

	// The HTTP API.
	client := &http.Client{Timeout: 60 * time.Second}
	call := func(method, path string, body any) []byte {
		t.Helper()
		var js []byte
		if body != nil {
			js, _ = json.Marshal(body)
		}
		b := adminCall(t, client, addr, method, path, string(js))
		saw(method+" "+path, b)
		return b
	}
	// stream reads an event stream for a while: a parked run's or a
	// session's does not end.
	stream := func(path string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, addr+path, nil)
		req.Header.Set("Authorization", "Bearer "+canaryAdmin)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20)) // ends at the deadline or the stream's end
		saw("GET "+path, b)
		if resp.StatusCode != http.StatusOK || len(b) == 0 {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
	}
	// parked waits until a run rests and returns its status.
	parked := func(id string) string {
		t.Helper()
		var run struct{ Status string }
		for range 20 { // each wait is bounded by the server
			if err := json.Unmarshal(call("GET", "/v1/runs/"+id+"/wait?timeout=30", nil), &run); err != nil {
				t.Fatal(err)
			}
			if run.Status != "running" {
				return run.Status
			}
		}
		t.Fatalf("run %s is still running", id)
		return ""
	}
	// sessionParked waits until a session's first submission parks on
	// its event, and returns its run.
	sessionParked := func(id string) string {
		t.Helper()
		for range 100 {
			var s struct {
				ActiveRun string `json:"active_run"`
			}
			if err := json.Unmarshal(call("GET", "/v1/sessions/"+id, nil), &s); err != nil {
				t.Fatal(err)
			}
			if s.ActiveRun != "" {
				if st := parked(s.ActiveRun); st != "waiting" {
					t.Fatalf("session %s: run %s is %s, want waiting on its event", id, s.ActiveRun, st)
				}
				return s.ActiveRun
			}
			time.Sleep(100 * time.Millisecond) // the worker polls the store
		}
		t.Fatalf("session %s started nothing", id)
		return ""
	}
	queued := func(id string) string {
		t.Helper()
		var q struct {
			Messages []struct {
				ID string `json:"id"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(call("GET", "/v1/sessions/"+id+"/queue", nil), &q); err != nil || len(q.Messages) != 1 {
			t.Fatalf("session %s queue: %v %+v", id, err, q)
		}
		return q.Messages[0].ID
	}

	// The console, signed in with the admin token.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Timeout: 60 * time.Second, Jar: jar}
	csrfRe := regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	page := func(path string) string {
		t.Helper()
		resp, err := browser.Get(addr + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		saw("console GET "+path, b)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("console GET %s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	csrf := ""
	form := func(path string, v url.Values) string {
		t.Helper()
		v.Set("csrf", csrf)
		resp, err := browser.PostForm(addr+path, v)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		saw("console POST "+path+" → "+resp.Request.URL.String(), append([]byte(resp.Request.URL.String()+"\n"), b...))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("console POST %s: %d %s", path, resp.StatusCode, b)
		}
		if u := resp.Request.URL.Query(); u.Get("error") != "" {
			t.Fatalf("console POST %s: %s", path, u.Get("error"))
		}
		return string(b)
	}
	m := csrfRe.FindStringSubmatch(page("/signin"))
	if m == nil {
		t.Fatal("the sign-in page has no anti-forgery field")
	}
	csrf = m[1]
	if m = csrfRe.FindStringSubmatch(form("/signin", url.Values{"token": {canaryAdmin}, "next": {"/runs"}})); m == nil {
		t.Fatal("signed in, the console shows no anti-forgery field")
	}
	csrf = m[1]

	// MCP over HTTP (/mcp) and over stdio (hitch mcp).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	onHTTP := mcptest.Connect(t, ctx, addr, canaryAdmin)
	stdioCmd := exec.Command(binary(t), "mcp", "-c", cfg, "--db", db)
	testproc.DieWithParent(stdioCmd)
	stdioCmd.Dir = dir
	stdioCmd.Env = inputsCanaryEnv("HOME=" + dir)
	stdioErr := &testproc.Buffer{}
	stdioCmd.Stderr = stdioErr
	onStdio, err := mcp.NewClient(&mcp.Implementation{Name: "canary", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: stdioCmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer onStdio.Close()
	tool := func(cs *mcp.ClientSession, name string, args map[string]any) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		b, _ := json.Marshal(res)
		saw("mcp "+name, b)
		if err != nil || res.IsError {
			t.Fatalf("mcp %s: %v %s", name, err, b)
		}
	}

	cred := map[string]string{"name": "ann", "secret": credentialCanary}
	var runs, sessions []string

	// Every run-parking input on the API, the CLI both ways, and what of
	// them the console takes.
	for _, p := range []string{"api", "srv", "loc", "web"} {
		start := func(agent string) string {
			id := p + "-" + agent
			in, instr := "go "+c, "answer as "+c
			switch p {
			case "api", "web":
				call("POST", "/v1/runs", map[string]any{"agent": agent, "id": id, "input": in, "instructions": instr})
			case "srv":
				remote("run", "--detach", "--agent", agent, "--id", id, "--instructions", instr, in)
			case "loc":
				local("run", "--detach", "--agent", agent, "--id", id, "--instructions", instr, in)
			}
			runs = append(runs, id)
			return id
		}
		w, s, a := start("woken"), start("shipper"), start("payer")
		u := p + "-unsure"
		runs = append(runs, u)
		for _, id := range []string{w, s, u, a} {
			if st := parked(id); st != "waiting" {
				t.Fatalf("run %s is %s, want waiting", id, st)
			}
		}
		data, by := `{"note":"`+c+`"}`, "ops "+c
		switch p {
		case "api":
			call("POST", "/v1/runs/"+w+"/wake", map[string]any{"event": "deploy.done", "data": json.RawMessage(data), "by": by})
			call("POST", "/v1/runs/"+s+"/calls/t1c1/complete", map[string]any{"output": "shipped " + c, "by": by})
			call("POST", "/v1/runs/"+u+"/reconcile", map[string]any{"call": "t1c1", "output": "it did: " + c, "by": by})
			call("POST", "/v1/runs/"+a+"/approvals/t1c1/reject", map[string]any{"credential": cred, "reason": "not with " + c})
		case "srv", "loc":
			do := remote
			if p == "loc" {
				local("wake", w, "--event", "deploy.done", "--data", data, "--by", by)
				local("calls", "complete", s, "t1c1", "--output", "shipped "+c, "--by", by)
				do = local
			} else {
				// wake and calls complete have no --server form: those
				// two inputs go over the API.
				call("POST", "/v1/runs/"+w+"/wake", map[string]any{"event": "deploy.done", "data": json.RawMessage(data), "by": by})
				call("POST", "/v1/runs/"+s+"/calls/t1c1/complete", map[string]any{"output": "shipped " + c, "by": by})
			}
			do("reconcile", u, "t1c1", "--output", "it did: "+c, "--by", by)
			do("approvals", "reject", a, "t1c1", "--reason", "not with "+c)
		case "web":
			// The console has no wake or completion form: those two
			// inputs go over the API.
			call("POST", "/v1/runs/"+w+"/wake", map[string]any{"event": "deploy.done", "data": json.RawMessage(data), "by": by})
			call("POST", "/v1/runs/"+s+"/calls/t1c1/complete", map[string]any{"output": "shipped " + c, "by": by})
			page("/runs/" + u)
			form("/runs/"+u+"/reconcile", url.Values{"call": {"t1c1"}, "as": {"output"}, "output": {"it did: " + c}})
			page("/approvals")
			form("/runs/"+a+"/approvals/t1c1", url.Values{"op": {"reject"}, "approver": {"ann"}, "secret": {credentialCanary},
				"reason": {"not with " + c}, "back": {"/approvals"}})
		}
		for _, id := range []string{w, s, u, a} {
			if st := parked(id); st != "completed" {
				t.Fatalf("run %s is %s after its answer, want completed", id, st)
			}
		}
	}

	// Every session input: metadata, a message in each mode, an edit.
	for _, p := range []string{"api", "srv", "loc", "web"} {
		id := p + "-ses"
		sessions = append(sessions, id)
		send := func(text, mode string) {
			switch p {
			case "api":
				call("POST", "/v1/sessions/"+id+"/messages", map[string]any{"text": text, "mode": mode})
			case "srv":
				remote("sessions", "send", "--detach", "--agent", "chat", "--mode", mode, id, text)
			case "loc":
				local("sessions", "send", "--detach", "--agent", "chat", "--mode", mode, id, text)
			case "web":
				form("/sessions/"+id+"/send", url.Values{"text": {text}, "mode": {mode}})
			}
		}
		switch p {
		case "api":
			call("POST", "/v1/sessions", map[string]any{"agent": "chat", "id": id, "metadata": map[string]any{"user": c}})
		case "web":
			page("/sessions")
			form("/sessions", url.Values{"agent": {"chat"}, "id": {id}})
		}
		send("task", "queue")
		sessionParked(id)
		send("queued "+c, "queue")
		msg := queued(id)
		switch p {
		case "api":
			call("POST", "/v1/sessions/"+id+"/queue/"+msg+"/edit", map[string]any{"text": "edited " + c})
		case "srv":
			remote("sessions", "edit", id, msg, "edited "+c)
		case "loc":
			local("sessions", "edit", id, msg, "edited "+c)
		case "web":
			page("/sessions/" + id)
			form("/sessions/"+id+"/queue/"+msg+"/edit", url.Values{"text": {"edited " + c}})
		}
		send("steer "+c, "steer")
		send("stop "+c, "interrupt")
	}

	// MCP: a run's input, and an approval's reason, on each transport.
	for p, cs := range map[string]*mcp.ClientSession{"mcph": onHTTP, "mcps": onStdio} {
		id := p + "-payer"
		tool(cs, "start_run", map[string]any{"agent": "payer", "input": "go " + c, "id": id})
		if st := parked(id); st != "waiting" {
			t.Fatalf("run %s is %s, want waiting", id, st)
		}
		tool(cs, "list_approvals", map[string]any{"run_id": id})
		tool(cs, "answer_approval", map[string]any{"run_id": id, "call": "t1c1", "approve": false, "reason": "not with " + c})
		tool(cs, "wait_run", map[string]any{"run_id": id, "timeout_seconds": 30})
		tool(cs, "run_status", map[string]any{"run_id": id})
		runs = append(runs, id)
	}

	// Read everything back on every surface.
	call("GET", "/v1/runs?limit=100", nil)
	call("GET", "/v1/approvals", nil)
	call("GET", "/v1/sessions", nil)
	page("/runs")
	page("/approvals")
	page("/sessions")
	var journals strings.Builder
	for _, id := range runs {
		call("GET", "/v1/runs/"+id, nil)
		journals.Write(call("GET", "/v1/runs/"+id+"/journal?limit=1000", nil))
		stream("/v1/runs/" + id + "/events")
		page("/runs/" + id)
		local("runs", "show", id)
		local("runs", "events", id, "--json")
		remote("runs", "show", id)
		remote("runs", "events", id, "--json")
	}
	for _, id := range sessions {
		b := call("GET", "/v1/sessions/"+id, nil)
		journals.Write(b)
		journals.Write(call("GET", "/v1/sessions/"+id+"/transcript", nil))
		call("GET", "/v1/sessions/"+id+"/status", nil)
		stream("/v1/sessions/" + id + "/events")
		page("/sessions/" + id)
		local("sessions", "show", id)
		remote("sessions", "show", id)
	}
	// The inputs arrived, as the marker: each run's input and answer,
	// each session's edited and steering text.
	if n, want := strings.Count(journals.String(), marker), 3*len(runs); n < want {
		t.Errorf("the journals hold the marker %d times, want at least %d:\n%s", n, want, journals.String())
	}
	for _, text := range []string{"edited " + marker, "steer " + marker, "stop " + marker, "not with " + marker, "shipped " + marker, "it did: " + marker} {
		if !strings.Contains(journals.String(), text) && !strings.Contains(journals.String(), strings.ReplaceAll(text, " ", `\u0020`)) {
			t.Errorf("no journal holds %q", text)
		}
	}

	onStdio.Close()
	onHTTP.Close()
	saw("hitch mcp's log", stdioErr.Bytes())
	stop()
	if base != "" {
		dump, err := exec.Command("pg_dump", "--no-owner", "-n", schema, strings.SplitN(base, "?", 2)[0]+"?sslmode=disable").CombinedOutput()
		if err != nil {
			t.Fatalf("pg_dump: %v\n%s", err, dump)
		}
		if !strings.Contains(string(dump), marker) {
			t.Fatalf("the dump holds no marker: it is not the scenario's schema\n%.2000s", dump)
		}
		if l := leaked(string(dump)); l != "" {
			t.Errorf("the PostgreSQL dump holds %s", l)
		}
	} else {
		storeClean(t, dir)
	}
	seenMu.Lock()
	defer seenMu.Unlock()
	if l := leaked(seen.String()); l != "" {
		t.Errorf("a surface answered with %s; all answers:\n%s", l, seen.String())
	}
}

// inputsCanaryKillWorker runs hitch worker until n commands of the unsure
// agent have started, then SIGKILLs it.
func inputsCanaryKillWorker(t *testing.T, dir, cfg, db string, n int) {
	t.Helper()
	cmd := exec.Command(binary(t), "worker", "-c", cfg, "--db", db, "--poll", "50ms")
	testproc.DieWithParent(cmd)
	cmd.Dir = dir
	cmd.Env = inputsCanaryEnv("HOME=" + dir)
	out := &testproc.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		started, _ := filepath.Glob(filepath.Join(dir, "started.*"))
		if len(started) >= n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d commands started under hitch worker:\n%s", len(started), n, out.Bytes())
		}
		time.Sleep(50 * time.Millisecond) // the commands are other processes
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}

// inputsCanaryServe starts hitch serve on the store and returns its URL
// and a stop that ends it with SIGTERM. Its log goes to saw.
func inputsCanaryServe(t *testing.T, dir, cfg, db string, saw func(string, []byte)) (string, func()) {
	t.Helper()
	cmd := exec.Command(binary(t), "serve", "-c", cfg, "--db", db, "--addr", "127.0.0.1:0", "--poll", "50ms")
	cmd.Dir = dir
	cmd.Env = inputsCanaryEnv("HOME=" + dir)
	s := testproc.Serve(t, cmd)
	var once sync.Once
	stop := func() {
		once.Do(func() {
			if code := s.Stop(); code != 0 {
				t.Errorf("hitch serve on SIGTERM: exit %d", code)
			}
			saw("hitch serve's log", []byte(s.Log()))
		})
	}
	t.Cleanup(stop)
	return s.URL, stop
}

// adminCall sends method path to the server at base with the admin token
// (body, when not empty, as JSON; an event stream asked for as one) and
// returns the answer's body, at most 16 MiB. An error, or a status of 300
// or more, ends t.
func adminCall(t *testing.T, client *http.Client, base, method, path, body string) []byte {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+canaryAdmin)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if strings.HasSuffix(path, "/events") {
		req.Header.Set("Accept", "text/event-stream")
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return b
}

// The server's admin token and the approver credential its /mcp answers
// with: variables of hitch serve's environment a command must not read.
const (
	canaryAdmin      = "canary-admin-token-0123"
	credentialCanary = "canary-credential-5Kq7"
)

// The secret canary over a real hitch serve: a run started over the API,
// whose model and bash tool repeat the secrets and read the server's
// environment, leaves them out of every API answer (the run, the runs
// list, every journal page, the event stream, the family stream), of the
// spans the server exports over OTLP/gRPC with content recording on, and
// of what the server logs — under bwrap, and without isolation, where a
// command can read the server's /proc/PID/environ: the variables of the
// model key, the tool's secret, the server token and the approver
// credential are blank there.
func TestSecretCanaryOverServeAndSpans(t *testing.T) {
	testproc.Heavy(t, "builds the binary")
	for name, path := range isolationPaths(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			serveCanary(t, path, name == "bwrap")
		})
	}
}

func serveCanary(t *testing.T, path string, isolated bool) {
	dir := canaryDir(t)
	f, err := os.OpenFile(filepath.Join(dir, "hitch.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	extra := "server:\n  tokens:\n    - {name: admin, role: admin, env: HITCH_TOKEN_ADM}\n"
	if !isolated {
		extra += "sandbox: {require_isolation: false}\n"
	}
	if _, err := f.WriteString(extra); err != nil {
		t.Fatal(err)
	}
	f.Close()
	rcv := otlptest.StartGRPC(t)

	cmd := exec.Command(binary(t), "serve", "-c", filepath.Join(dir, "hitch.yaml"), "--addr", "127.0.0.1:0", "--poll", "50ms")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + path, "HOME=" + dir, "HITCH_CANARY_KEY=" + keyCanary, "HITCH_CANARY_TOKEN=" + tokenCanary,
		"HITCH_TOKEN_ADM=" + canaryAdmin, "HITCH_CREDENTIAL=ann:" + credentialCanary,
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.Endpoint(), "OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
		"OTEL_METRICS_EXPORTER=none", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true"}
	serve := testproc.Serve(t, cmd)
	url := serve.URL

	var answers strings.Builder // every API answer, whole
	client := &http.Client{Timeout: 70 * time.Second}
	call := func(method, path, body string) []byte {
		t.Helper()
		b := adminCall(t, client, url, method, path, body)
		answers.Write(b)
		return b
	}

	call("POST", "/v1/runs", `{"agent":"ops","input":"check the secrets","id":"canary-s"}`)
	var run struct{ Status string }
	for range 10 { // each wait is bounded by the server
		if json.Unmarshal(call("GET", "/v1/runs/canary-s/wait?timeout=30", ""), &run) != nil || run.Status != "running" {
			break
		}
	}
	if run.Status != "completed" {
		t.Fatalf("run ended %q:\n%s", run.Status, answers.String())
	}
	call("GET", "/v1/runs/canary-s", "")
	call("GET", "/v1/runs", "")
	pages := 0
	for after := "0"; after != ""; pages++ {
		var page struct{ Next *int64 }
		if err := json.Unmarshal(call("GET", "/v1/runs/canary-s/journal?limit=3&after="+after, ""), &page); err != nil {
			t.Fatal(err)
		}
		after = ""
		if page.Next != nil {
			after = fmt.Sprint(*page.Next)
		}
		if pages > 1000 {
			t.Fatal("the journal has no end")
		}
	}
	stream := string(call("GET", "/v1/runs/canary-s/events", ""))
	call("GET", "/v1/runs/canary-s/family/events", "")
	// The doctor's checks of the deployment name its secrets, never their values.
	if doc := string(call("GET", "/v1/doctor", "")); !strings.Contains(doc, `"name":"secrets"`) {
		t.Fatalf("GET /v1/doctor: %s", doc)
	}
	if pages < 5 || !strings.Contains(stream, "run.ended") || !strings.Contains(answers.String(), "[secret:gh]") {
		t.Fatalf("the API showed too little to judge (%d pages):\n%s", pages, answers.String())
	}
	if !isolated && !strings.Contains(answers.String(), "HITCH_CANARY_KEY=") && !strings.Contains(answers.String(), reverse("HITCH_CANARY_KEY=")) {
		t.Fatalf("the command did not read the server's environment:\n%s", answers.String())
	}

	// Spans are flushed when the server stops.
	if code := serve.Stop(); code != 0 {
		t.Fatalf("hitch serve on SIGTERM: exit %d", code)
	}
	names := map[string]bool{}
	for _, s := range rcv.Spans() {
		names[s.Name] = true
	}
	raw := string(rcv.Raw())
	if !names["invoke_agent ops"] || !names["execute_tool bash"] || !strings.Contains(raw, "gen_ai.output.text") {
		t.Fatalf("spans received: %v (content recorded: %v)", names, strings.Contains(raw, "gen_ai.output.text"))
	}

	if l := leaked(answers.String()); l != "" {
		t.Errorf("an API answer holds %q:\n%s", l, answers.String())
	}
	if l := leaked(raw); l != "" {
		t.Errorf("the exported spans hold %q", l)
	}
	if l := leaked(serve.Log()); l != "" {
		t.Errorf("the server logged %q:\n%s", l, serve.Log())
	}
}
