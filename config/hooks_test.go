package config

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/hook"
	"github.com/hitch-dev/hitch/internal/hitchtest"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/sqlite"
)

// TestHookProblems: every problem of the hooks comes back at once, each
// naming the file, the line and the field.
func TestHookProblems(t *testing.T) {
	t.Parallel()
	path := write(t, onDemo(`secrets:
  key: {value: a-demo-key-for-the-tests-0123, demo: true}
hooks:
  - {point: after_lunch, command: [true]}
agents:
  - name: ops
    model: demo
    policy: allow_all
    hooks:
      - {point: pre_tool, command: [./missing.sh]}
      - {point: post_turn, url: "http://127.0.0.1:1/validate"}
      - {point: pre_tool, when: "args.x +", command: [true]}
      - {point: pre_generate, match: [bash], command: [true]}
      - {point: pre_tool, url: "http://127.0.0.1:1/x", secret: nokey}
      - {point: pre_tool, command: [true], on_error: sometimes, timeout: 2h}
      - {point: pre_tool}
      - {point: pre_trigger, match: [bash], command: [true]}
`))
	_, err := Load(path, Options{})
	if err == nil || !IsProblem(err) {
		t.Fatalf("err = %v", err)
	}
	msg := err.Error()
	for _, w := range []string{
		`:7: hooks[0].point: "after_lunch": want one of`,
		`:13: agents[0].hooks[0].command[0]: stat `,
		`:14: agents[0].hooks[1].secret: is required with url`,
		`:15: agents[0].hooks[2].when: column`,
		`:16: agents[0].hooks[3].match: is for pre_tool and post_tool hooks`,
		`:17: agents[0].hooks[4].secret: "nokey" is not declared under secrets`,
		`:18: agents[0].hooks[5].on_error: "sometimes"`,
		`:18: agents[0].hooks[5].timeout: "2h"`,
		`:19: agents[0].hooks[6].command: is required`,
		`:20: agents[0].hooks[7].match: is for pre_tool and post_tool hooks`,
	} {
		if !strings.Contains(msg, w) {
			t.Errorf("error lacks %q:\n%s", w, msg)
		}
	}
	if n := strings.Count(msg, "hooks[0].point"); n != 1 {
		t.Errorf("the file's hook is reported %d times:\n%s", n, msg)
	}
}

// bashOps is a hitch.yaml: the scripted demo model on script.yaml, the
// top-level lines top (secrets, hooks), and one agent, ops, that runs bash
// under allow_all with hooks (list items, six spaces in).
func bashOps(top, hooks string) string {
	return demoModel + top + `agents:
  - name: ops
    model: demo
    tools: [bash]
    policy: allow_all
    hooks:
` + hooks
}

// hookRun is a config with hooks, loaded, and a runtime on a real SQLite
// file.
type hookRun struct {
	dir string
	cfg *Config
	rt  *hitch.Runtime
	st  store.Store
}

// openHooks writes files (hitch.yaml among them; scripts made executable)
// into a folder, loads the config with env as its environment, and opens
// a runtime on it.
func openHooks(t *testing.T, files map[string]string, env map[string]string) *hookRun {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := Load(filepath.Join(dir, "hitch.yaml"), Options{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cfg.Close() })
	st := hitchtest.OpenStore(t, filepath.Join(dir, "hitch.db"))
	rt := hitchtest.Open(t, hitch.Config{Store: st, Agents: cfg.Agents, Secrets: cfg.Secrets})
	return &hookRun{dir: dir, cfg: cfg, rt: rt, st: st}
}

// run starts a run of the agent and awaits it.
func (h *hookRun) run(t *testing.T, id string) hitch.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, err := h.cfg.Agent("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.rt.Start(ctx, a, "go", hitch.WithID(id)); err != nil {
		t.Fatal(err)
	}
	run, err := h.rt.Await(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func (h *hookRun) file(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h.dir, name))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

// entryOf decodes the first entry of kind in the run's journal into v.
func entryOf(t *testing.T, st store.Store, runID, kind string, v any) bool {
	t.Helper()
	for _, e := range journal(t, st, runID) {
		if e.Kind == kind {
			if err := json.Unmarshal(e.Data, v); err != nil {
				t.Fatal(err)
			}
			return true
		}
	}
	return false
}

const effectScript = `turns:
  - calls: [{name: bash, args: '{"command": "echo ran >> effects.txt"}'}]
  - text: done
`

// TestHooksDenyRewriteOrder: three command hooks at pre_tool run in
// priority order; the first rewrites the command, which the second sees
// and passes, and the body runs what they left; a denying hook stops the
// body. Each decision is journaled under its hook's name.
func TestHooksDenyRewriteOrder(t *testing.T) {
	t.Parallel()
	h := openHooks(t, map[string]string{
		"script.yaml": effectScript,
		"rewrite.sh":  "#!/bin/sh\necho rewrite >> order.txt\necho '{\"arguments\": {\"command\": \"echo rewritten >> effects.txt\"}}'\n",
		"check.sh":    "#!/bin/sh\necho check >> order.txt\ngrep -q rewritten && echo '{\"action\": \"run\", \"reason\": \"saw the rewrite\"}'\n",
		"last.sh":     "#!/bin/sh\necho last >> order.txt\n",
		"hitch.yaml": bashOps(`hooks:
  - {name: last, point: pre_tool, command: [./last.sh], priority: 30}
`, `      - {name: check, point: pre_tool, match: ["ba*"], command: [./check.sh], priority: 20}
      - {name: rewrite, point: pre_tool, command: [./rewrite.sh], priority: 10}
      - {name: never, point: pre_tool, match: [read], command: [./last.sh]}
`)}, nil)
	if run := h.run(t, "r1"); run.Status != hitchtype.StatusCompleted {
		t.Fatalf("run: %+v", run)
	}
	if got := h.file(t, "order.txt"); got != "rewrite\ncheck\nlast\n" {
		t.Errorf("hooks ran in order %q", got)
	}
	if got := h.file(t, "effects.txt"); got != "rewritten\n" {
		t.Errorf("the body ran %q, want the rewritten command once", got)
	}
	var hooked hitchtype.CallHooked
	if !entryOf(t, h.st, "r1", hitchtype.KindCallHooked, &hooked) {
		t.Fatal("no call.hooked entry")
	}
	var names []string
	for _, d := range hooked.Hooks {
		names = append(names, d.Hook)
	}
	if strings.Join(names, ",") != "rewrite,check,last" || !hooked.Hooks[0].Rewrote || hooked.Hooks[1].Reason != "saw the rewrite" {
		t.Errorf("journaled %+v", hooked)
	}
	var list []string
	for _, i := range h.cfg.Agents[0].Describe().HookList {
		list = append(list, i.Name+"@"+i.Point)
	}
	if strings.Join(list, ",") != "never@pre_tool,rewrite@pre_tool,check@pre_tool,last@pre_tool" {
		t.Errorf("listed %v", list)
	}

	d := openHooks(t, map[string]string{
		"script.yaml": effectScript,
		"deny.sh":     "#!/bin/sh\necho 'no shell today' >&2\nexit 2\n",
		"hitch.yaml": bashOps("", `      - {name: gate, point: pre_tool, command: [./deny.sh]}
`)}, nil)
	if run := d.run(t, "r1"); run.Status != hitchtype.StatusCompleted {
		t.Fatalf("run: %+v", run)
	}
	if got := d.file(t, "effects.txt"); got != "" {
		t.Errorf("a denied body ran: %q", got)
	}
	if !entryOf(t, d.st, "r1", hitchtype.KindCallHooked, &hooked) || hooked.Action != "deny" || !strings.Contains(hooked.Reason, "no shell today") || hooked.Hooks[0].Hook != "gate" {
		t.Errorf("journaled %+v", hooked)
	}
}

// TestHookFailureModes: a hook that crashes, times out or prints garbage
// fails closed by default at pre_tool (the body does not run) and lets the
// body run with fail_open.
func TestHookFailureModes(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"crash":   "kill -SEGV $$",
		"timeout": "sleep 30",
		"garbage": "echo '<html>not json</html>'",
	} {
		for _, mode := range []string{"fail_closed", "fail_open"} {
			t.Run(name+"/"+mode, func(t *testing.T) {
				t.Parallel()
				h := openHooks(t, map[string]string{
					"script.yaml": effectScript,
					"bad.sh":      "#!/bin/sh\n" + body + "\n",
					"hitch.yaml": bashOps("", `      - {name: bad, point: pre_tool, command: [./bad.sh], timeout: 300ms, on_error: `) + mode + `}
`}, nil)
				if run := h.run(t, "r1"); run.Status != hitchtype.StatusCompleted {
					t.Fatalf("run: %+v", run)
				}
				want := ""
				if mode == "fail_open" {
					want = "ran\n"
				}
				if got := h.file(t, "effects.txt"); got != want {
					t.Errorf("effects %q, want %q", got, want)
				}
				var hooked hitchtype.CallHooked
				if !entryOf(t, h.st, "r1", hitchtype.KindCallHooked, &hooked) || len(hooked.Hooks) != 1 || hooked.Hooks[0].Error == "" || hooked.Hooks[0].OnError != mode {
					t.Errorf("journaled %+v", hooked)
				}
			})
		}
	}
}

// TestHookHoldReleased: a hook holds a call; the run parks; releasing it
// with Execute runs the body once, and a second release is refused.
func TestHookHoldReleased(t *testing.T) {
	t.Parallel()
	h := openHooks(t, map[string]string{
		"script.yaml": effectScript,
		"hold.sh":     "#!/bin/sh\necho '{\"action\": \"hold\", \"reason\": \"the change board decides\"}'\n",
		"hitch.yaml": bashOps("", `      - {name: board, point: pre_tool, command: [./hold.sh]}
`)}, nil)
	if run := h.run(t, "r1"); run.Status != hitchtype.StatusWaiting {
		t.Fatalf("run: %+v", run)
	}
	ctx := context.Background()
	ws, err := h.rt.Waits(ctx, "r1")
	if err != nil || len(ws) != 1 || ws[0].Kind != hitchtype.WaitHeld || ws[0].Call != "t1c1" {
		t.Fatalf("waits %+v, %v", ws, err)
	}
	if err := h.rt.CompleteCall(ctx, "r1", hitch.Completion{Call: "t1c1", Execute: true, By: "board"}); err != nil {
		t.Fatal(err)
	}
	run, err := h.rt.Await(ctx, "r1")
	if err != nil || run.Status != hitchtype.StatusCompleted {
		t.Fatalf("run: %+v, %v", run, err)
	}
	if err := h.rt.CompleteCall(ctx, "r1", hitch.Completion{Call: "t1c1", Execute: true}); !errors.Is(err, hitch.ErrAnswered) {
		t.Errorf("second release: %v", err)
	}
	if got := h.file(t, "effects.txt"); got != "ran\n" {
		t.Errorf("effects %q, want one run", got)
	}
}

// TestValidatorTemplateInNextRequest: a post_turn validator refuses the
// first answer; the model's next request carries the hook's message with
// {value} and {reason} filled in.
func TestValidatorTemplateInNextRequest(t *testing.T) {
	t.Parallel()
	h := openHooks(t, map[string]string{
		"script.yaml": "turns:\n  - text: a much too long answer\n  - text: short\n",
		"length.sh": `#!/bin/sh
if grep -q '"answer":"a much too long answer"'; then echo '{"action": "deny", "reason": "over the limit", "value": 22}'; fi
`,
		"hitch.yaml": `
models:
  demo: {provider: recorded, model: validator-template, script: script.yaml}
agents:
  - name: ops
    model: demo
    policy: allow_all
    hooks:
      - name: length
        point: post_turn
        command: [./length.sh]
        message: "The answer measured {value} bytes ({reason}). Answer in fewer words."
`}, nil)
	run := h.run(t, "r1")
	if run.Status != hitchtype.StatusCompleted || run.Outcome.Answer != "short" {
		t.Fatalf("run: %+v", run)
	}
	rs := recorded("validator-template")
	reqs := rs[len(rs)-1].requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	var refused hitchtype.AnswerRefused
	if !entryOf(t, h.st, "r1", hitchtype.KindAnswerRefused, &refused) {
		t.Fatal("no answer.refused")
	}
	if refused.Message != "The answer measured 22 bytes (over the limit). Answer in fewer words." {
		t.Fatalf("message %q", refused.Message)
	}
	if want, _ := json.Marshal(refused.Message); !strings.Contains(string(reqs[1]), string(want)) {
		t.Errorf("the next request lacks %s:\n%s", want, reqs[1])
	}
	var decided hitchtype.HookDecided
	if !entryOf(t, h.st, "r1", hitchtype.KindHookDecided, &decided) || decided.Point != "post_turn" || decided.Hooks[0].Hook != "length" || decided.Hooks[0].Value == "" {
		t.Errorf("journaled %+v", decided)
	}
}

// TestHookSecretCanary: a hook command's environment holds only the
// secret handed to it, not the agent's nor the host's; its output echoing
// that secret is redacted before it is journaled; a webhook's body holds
// no secret a tool printed.
func TestHookSecretCanary(t *testing.T) {
	t.Parallel()
	const (
		handed = "handed-to-the-hook-0123456789"
		agents = "the-agents-own-secret-0123456789"
		host   = "a-model-key-on-the-host-0123456789"
	)
	rc := &signedReceiver{key: "the-webhook-key-0123456789"}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	h := openHooks(t, map[string]string{
		"script.yaml": `turns:
  - calls: [{name: bash, args: '{"command": "echo $AGENT_TOKEN"}'}]
  - text: done
`,
		"echo.sh": "#!/bin/sh\nenv > hook-env.txt\necho \"{\\\"reason\\\": \\\"my token is $HOOK_TOKEN\\\"}\"\n",
		"hitch.yaml": `
models:
  demo: {provider: scripted, script: script.yaml, api_key_env: MODEL_KEY}
secrets:
  hook_token: {env: HOOK_TOKEN_SRC}
  agent_token: {env: AGENT_TOKEN_SRC}
  hook_key: {env: HOOK_KEY_SRC}
agents:
  - name: ops
    model: demo
    tools: [bash]
    policy: allow_all
    env: {AGENT_TOKEN: agent_token}
    hooks:
      - {name: echo, point: pre_tool, command: [./echo.sh], env: {HOOK_TOKEN: hook_token}}
      - {name: audit, point: post_tool, url: "` + srv.URL + `", secret: hook_key}
`}, map[string]string{"HOOK_TOKEN_SRC": handed, "AGENT_TOKEN_SRC": agents, "MODEL_KEY": host, "HOOK_KEY_SRC": rc.key})
	if run := h.run(t, "r1"); run.Status != hitchtype.StatusCompleted {
		t.Fatalf("run: %+v", run)
	}
	env := h.file(t, "hook-env.txt")
	if !strings.Contains(env, "HOOK_TOKEN="+handed) || strings.Contains(env, agents) || strings.Contains(env, host) || strings.Contains(env, rc.key) {
		t.Errorf("the hook's environment:\n%s", env)
	}
	all := entriesText(journal(t, h.st, "r1"))
	if strings.Contains(all, handed) || strings.Contains(all, agents) || !strings.Contains(all, "my token is [secret:hook_token]") {
		t.Errorf("journal:\n%s", all)
	}
	bodies := rc.received()
	if len(bodies) != 1 || strings.Contains(bodies[0], agents) || !strings.Contains(bodies[0], "[secret:agent_token]") {
		t.Errorf("webhook bodies %q", bodies)
	}
}

// signedReceiver is a local webhook receiver that checks each delivery's
// signature with its own copy of the key, as a real receiver would, and
// answers 401 to a bad one.
type signedReceiver struct {
	key    string
	answer string
	mu     sync.Mutex
	bodies []string
}

func (rc *signedReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	m := hmac.New(sha256.New, []byte(rc.key))
	m.Write([]byte(r.Header.Get("X-Hitch-Timestamp") + "." + string(body)))
	if !hmac.Equal([]byte("sha256="+hex.EncodeToString(m.Sum(nil))), []byte(r.Header.Get("X-Hitch-Signature"))) {
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	rc.mu.Lock()
	rc.bodies = append(rc.bodies, string(body))
	rc.mu.Unlock()
	io.WriteString(w, rc.answer)
}

func (rc *signedReceiver) received() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.bodies...)
}

// TestWebhookWrongSecret: a webhook signed with a secret the receiver does
// not hold is refused by it (401); the pre_tool hook then fails closed and
// the body does not run. With the right secret, the receiver's denial
// stands.
func TestWebhookWrongSecret(t *testing.T) {
	t.Parallel()
	rc := &signedReceiver{key: "the-receivers-key-0123456789", answer: `{"action": "deny", "reason": "the receiver says no"}`}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	for _, tc := range []struct{ key, reason string }{
		{"not-the-receivers-key-0123456789", "401"},
		{rc.key, "the receiver says no"},
	} {
		h := openHooks(t, map[string]string{
			"script.yaml": effectScript,
			"hitch.yaml": bashOps(`secrets:
  hook_key: {env: HOOK_KEY}
`, `      - {name: remote, point: pre_tool, url: "`) + srv.URL + `", secret: hook_key, timeout: 2s}
`}, map[string]string{"HOOK_KEY": tc.key})
		if run := h.run(t, "r1"); run.Status != hitchtype.StatusCompleted {
			t.Fatalf("run: %+v", run)
		}
		var hooked hitchtype.CallHooked
		if !entryOf(t, h.st, "r1", hitchtype.KindCallHooked, &hooked) || hooked.Action != "deny" || !strings.Contains(hooked.Reason, tc.reason) {
			t.Errorf("key %s: journaled %+v", tc.key, hooked)
		}
		if got := h.file(t, "effects.txt"); got != "" {
			t.Errorf("the body ran: %q", got)
		}
	}
}

var _ hook.Lister // the declared hooks list themselves

// releaseChildEnv names the folder of a config whose held call the child
// releases (see releaseChild).
const releaseChildEnv = "HITCH_TEST_RELEASE_CHILD"

// startBlocked is a store that never commits a call.started: it says
// "starting" on standard output and blocks, so the parent can kill the
// process between a release and the body it releases.
type startBlocked struct{ store.Store }

func (s startBlocked) JournalAppend(ctx context.Context, p store.JournalAppendParams) (store.Appended, error) {
	for _, e := range p.Entries {
		if e.Kind == hitchtype.KindCallStarted {
			os.Stdout.WriteString("starting\n")
			select {}
		}
	}
	return s.Store.JournalAppend(ctx, p)
}

// releaseChild releases run r1's held call t1c1 with Execute, in a runtime
// whose store blocks before the body's start.
func releaseChild(dir string) int {
	ctx := context.Background()
	cfg, err := Load(filepath.Join(dir, "hitch.yaml"), Options{})
	if err != nil {
		os.Stderr.WriteString(err.Error())
		return 2
	}
	st, err := sqlite.Open(ctx, filepath.Join(dir, "hitch.db"))
	if err != nil {
		os.Stderr.WriteString(err.Error())
		return 2
	}
	rt, err := hitch.Open(hitch.Config{Store: startBlocked{st}, Agents: cfg.Agents, Secrets: cfg.Secrets})
	if err != nil {
		os.Stderr.WriteString(err.Error())
		return 2
	}
	if err := rt.CompleteCall(ctx, "r1", hitch.Completion{Call: "t1c1", Execute: true, By: "board"}); err != nil {
		os.Stderr.WriteString(err.Error())
		return 3
	}
	select {} // the parent kills this process
}

// TestHookReleaseSurvivesKill: a call held by a hook is released in a
// process that is killed with SIGKILL after the release is journaled and
// before the body starts; another process recovers the run and runs the
// body exactly once.
func TestHookReleaseSurvivesKill(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"script.yaml": effectScript,
		"hold.sh":     "#!/bin/sh\necho '{\"action\": \"hold\", \"reason\": \"the change board decides\"}'\n",
		"hitch.yaml": bashOps("", `      - {name: board, point: pre_tool, command: [./hold.sh]}
`)}
	h := openHooks(t, files, nil)
	if run := h.run(t, "r1"); run.Status != hitchtype.StatusWaiting {
		t.Fatalf("run: %+v", run)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := h.rt.Close(ctx); err != nil {
		t.Fatal(err)
	}

	child := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), releaseChildEnv+"="+h.dir)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	child.Stderr = &stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "starting\n" {
		child.Process.Kill()
		child.Wait()
		t.Fatalf("child said %q (%v); stderr: %s", line, err, stderr.String())
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()

	es := entriesText(journal(t, h.st, "r1"))
	if !strings.Contains(es, hitchtype.KindApprovalGrant) || strings.Contains(es, hitchtype.KindCallStarted) {
		t.Fatalf("the release is not durable, or the body started:\n%s", es)
	}
	if got := h.file(t, "effects.txt"); got != "" {
		t.Fatalf("the body ran before the kill: %q", got)
	}

	// Another process, whose store clock is past the dead one's lease.
	st, err := sqlite.Open(ctx, filepath.Join(h.dir, "hitch.db"), sqlite.WithClock(func() time.Time { return time.Now().Add(time.Minute) }))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: h.cfg.Agents, Secrets: h.cfg.Secrets})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	if n, err := rt.Recover(ctx); n != 1 || err != nil {
		t.Fatalf("recovered %d runs: %v", n, err)
	}
	run, err := rt.Await(ctx, "r1")
	if err != nil || run.Status != hitchtype.StatusCompleted {
		t.Fatalf("run: %+v, %v", run, err)
	}
	if got := h.file(t, "effects.txt"); got != "ran\n" {
		t.Errorf("effects %q, want the body once", got)
	}
	if n := strings.Count(entriesText(journal(t, st, "r1")), hitchtype.KindCallStarted); n != 1 {
		t.Errorf("%d call.started entries, want 1", n)
	}
}
