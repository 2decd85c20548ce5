package declared_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/hook"
	"github.com/hitch-dev/hitch/hook/declared"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/sandbox"
	"github.com/hitch-dev/hitch/sandbox/local"
	"github.com/hitch-dev/hitch/secret"
)

// script writes an executable shell script into dir and returns a command
// hook that runs it in a local sandbox on dir.
func script(t *testing.T, dir, name, body string, env map[string]string) *declared.Command {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return &declared.Command{Args: []string{p}, Env: env, Sandbox: func() (sandbox.Sandbox, error) {
		return local.New(local.Config{Root: dir})
	}}
}

func newSet(t *testing.T, hooks ...declared.Hook) *declared.Set {
	t.Helper()
	s, err := declared.New(hooks, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func call(args string) hook.Call {
	return hook.Call{RunID: "r1", Agent: "ops", ID: "t1c1", Tool: "bash", Arguments: json.RawMessage(args)}
}

// decided runs fn with a decisions collector and returns what was recorded.
func decided(t *testing.T, fn func(ctx context.Context)) []hook.Decision {
	t.Helper()
	ctx, ds := hook.WithDecisions(context.Background())
	fn(ctx)
	return ds.All()
}

// TestCommandDeniesRewritesHolds: real commands deny (by answer and by exit
// 2), rewrite arguments that the next hook sees, and hold a call; each
// decision is recorded under the hook's name.
func TestCommandDeniesRewritesHolds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rewrite := script(t, dir, "rewrite.sh", `cat > seen1.json; echo '{"action":"run","arguments":{"command":"ls -l"}}'`, nil)
	gate := script(t, dir, "gate.sh", `cat > seen2.json; grep -q '"ls -l"' seen2.json && echo '{"action":"deny","reason":"no listing"}'`, nil)
	exit2 := script(t, dir, "exit2.sh", `echo 'not on my watch' >&2; exit 2`, nil)
	hold := script(t, dir, "hold.sh", `echo '{"action":"hold","reason":"a person must look","requirement":"ops"}'`, nil)

	var v hook.ToolVerdict
	ds := decided(t, func(ctx context.Context) {
		var err error
		v, err = newSet(t,
			declared.Hook{Name: "gate", Point: declared.PreTool, Priority: 20, Command: gate},
			declared.Hook{Name: "rewrite", Point: declared.PreTool, Priority: 10, Command: rewrite},
		).PreTool(ctx, call(`{"command":"ls"}`))
		if err != nil {
			t.Fatal(err)
		}
	})
	if v.Action != hook.Deny || !strings.Contains(v.Reason, "no listing") || !strings.Contains(v.Reason, "gate") {
		t.Fatalf("verdict %+v, want gate's denial", v)
	}
	if len(ds) != 2 || ds[0].Hook != "rewrite" || !ds[0].Rewrote || ds[1].Hook != "gate" || ds[1].Action != "deny" {
		t.Fatalf("decisions %+v", ds)
	}
	var seen declared.Event
	b, _ := os.ReadFile(filepath.Join(dir, "seen1.json"))
	if err := json.Unmarshal(b, &seen); err != nil || seen.Point != "pre_tool" || seen.Hook != "rewrite" || seen.Call.Tool != "bash" || seen.RunID != "r1" {
		t.Fatalf("event %s: %v", b, err)
	}

	v, err := newSet(t, declared.Hook{Name: "exit2", Point: declared.PreTool, Command: exit2}).PreTool(context.Background(), call(`{}`))
	if err != nil || v.Action != hook.Deny || !strings.Contains(v.Reason, "not on my watch") {
		t.Fatalf("exit 2: %+v, %v", v, err)
	}
	v, err = newSet(t, declared.Hook{Name: "hold", Point: declared.PreTool, Command: hold}).PreTool(context.Background(), call(`{}`))
	if err != nil || v.Action != hook.Hold || v.Requirement != "ops" {
		t.Fatalf("hold: %+v, %v", v, err)
	}
	// A rewrite alone lets the call run with the new arguments.
	v, err = newSet(t, declared.Hook{Name: "rewrite", Point: declared.PreTool, Command: rewrite}).PreTool(context.Background(), call(`{"command":"ls"}`))
	if err != nil || v.Action != hook.Run || string(v.Arguments) != `{"command":"ls -l"}` {
		t.Fatalf("rewrite: %+v, %v", v, err)
	}
}

// TestPriorityOrder: three hooks at one point run in ascending priority,
// ties in the order declared, whatever order they were given in.
func TestPriorityOrder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mk := func(name string, prio int) declared.Hook {
		return declared.Hook{Name: name, Point: declared.PreTool, Priority: prio,
			Command: script(t, dir, name+".sh", "echo "+name+" >> order.txt", nil)}
	}
	s := newSet(t, mk("c", 30), mk("a", 10), mk("b1", 20), mk("b2", 20))
	if _, err := s.PreTool(context.Background(), call(`{}`)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "order.txt"))
	if string(b) != "a\nb1\nb2\nc\n" {
		t.Fatalf("ran in order %q", b)
	}
	var names []string
	for _, i := range s.List() {
		names = append(names, i.Name)
	}
	if strings.Join(names, ",") != "a,b1,b2,c" {
		t.Fatalf("listed %v", names)
	}
}

// TestFailureModes: a hook that crashes, times out or prints garbage is a
// failure; fail_open goes on without it, fail_closed denies.
func TestFailureModes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := map[string]*declared.Command{
		"crash":   script(t, dir, "crash.sh", `echo boom >&2; kill -SEGV $$`, nil),
		"timeout": script(t, dir, "slow.sh", `sleep 30`, nil),
		"garbage": script(t, dir, "garbage.sh", `echo 'this is not json'`, nil),
	}
	for name, cmd := range bad {
		for _, mode := range []declared.OnError{declared.FailOpen, declared.FailClosed} {
			t.Run(name+"/"+string(mode), func(t *testing.T) {
				t.Parallel()
				h := declared.Hook{Name: name, Point: declared.PreTool, OnError: mode, Timeout: 300 * time.Millisecond, Command: cmd}
				var v hook.ToolVerdict
				ds := decided(t, func(ctx context.Context) {
					var err error
					if v, err = newSet(t, h).PreTool(ctx, call(`{}`)); err != nil {
						t.Fatal(err)
					}
				})
				want := hook.Run
				if mode == declared.FailClosed {
					want = hook.Deny
				}
				if v.Action != want || len(ds) != 1 || ds[0].Error == "" || ds[0].OnError != string(mode) {
					t.Fatalf("verdict %+v, decisions %+v", v, ds)
				}
			})
		}
	}
	// A post_tool hook fails open by default: the result stands.
	r, err := newSet(t, declared.Hook{Name: "garbage", Point: declared.PostTool, Command: bad["garbage"]}).
		PostTool(context.Background(), call(`{}`), hook.Result{Output: "kept"})
	if err != nil || r.Output != "kept" {
		t.Fatalf("post_tool: %+v, %v", r, err)
	}
	// A pre_generate hook fails closed by default: the run stops.
	if _, err := newSet(t, declared.Hook{Name: "garbage", Point: declared.PreGenerate, Command: bad["garbage"]}).
		PreGenerate(context.Background(), hook.Generate{RunID: "r1", Agent: "ops", Turn: 1}); err == nil || !strings.Contains(err.Error(), "garbage") {
		t.Fatalf("pre_generate: %v", err)
	}
}

// TestMatchAndWhen: a hook sees only the tools its globs match and the
// events its condition holds for.
func TestMatchAndWhen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	deny := script(t, dir, "deny.sh", `echo '{"action":"deny","reason":"caught"}'`, nil)
	when, err := policy.CompileCondition(`args.command.startsWith("rm")`)
	if err != nil {
		t.Fatal(err)
	}
	s := newSet(t, declared.Hook{Name: "rm", Point: declared.PreTool, Match: []string{"ba*"}, When: when, Command: deny})
	for _, tc := range []struct {
		tool, args string
		want       hook.Action
	}{{"bash", `{"command":"rm -rf /"}`, hook.Deny}, {"bash", `{"command":"ls"}`, hook.Run}, {"read", `{"command":"rm"}`, hook.Run}} {
		c := call(tc.args)
		c.Tool = tc.tool
		v, err := s.PreTool(context.Background(), c)
		if err != nil || v.Action != tc.want {
			t.Fatalf("%s %s: %+v, %v", tc.tool, tc.args, v, err)
		}
	}
}

// TestValidatorTemplate: a post_turn hook's refusal builds the message
// from its template with {value} and {reason}; a failing validator keeps
// the generic text.
func TestValidatorTemplate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	v := script(t, dir, "count.sh", `n=$(wc -c); echo "{\"action\":\"deny\",\"reason\":\"too long\",\"value\":$n}"`, nil)
	s := newSet(t, declared.Hook{Name: "length", Point: declared.PostTurn, Command: v, Message: "Your answer measured {value} bytes ({reason}); shorten it."})
	got, err := s.PostTurn(context.Background(), hook.Answer{RunID: "r1", Agent: "ops", Text: "hello"})
	if err != nil || got.Valid || !strings.HasPrefix(got.Message, "Your answer measured ") || !strings.HasSuffix(got.Message, " bytes (too long); shorten it.") {
		t.Fatalf("verdict %+v, %v", got, err)
	}
	broken := newSet(t, declared.Hook{Name: "broken", Point: declared.PostTurn, Command: script(t, dir, "broken.sh", "exit 3", nil), Message: "never {value}"})
	if _, err := broken.PostTurn(context.Background(), hook.Answer{Text: "x"}); err == nil {
		t.Fatal("a failing validator that fails closed gave no error")
	}
}

// TestCommandEnvironment: a hook command sees the sandbox's bounded
// environment and the variables it was handed, and nothing else of the
// host's, secrets included.
func TestCommandEnvironment(t *testing.T) {
	t.Setenv("HITCH_TEST_HOST_SECRET", "canary-host-value-0123456789")
	dir := t.TempDir()
	env := script(t, dir, "env.sh", `env > env.txt`, map[string]string{"HANDED": "handed-value-0123456789"})
	if _, err := newSet(t, declared.Hook{Name: "env", Point: declared.PreTool, Command: env}).PreTool(context.Background(), call(`{}`)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "env.txt"))
	got := string(b)
	if strings.Contains(got, "canary-host-value") || !strings.Contains(got, "HANDED=handed-value-0123456789") ||
		!strings.Contains(got, "HITCH_HOOK=env") || !strings.Contains(got, "HITCH_HOOK_POINT=pre_tool") {
		t.Fatalf("environment:\n%s", got)
	}
}

// receiver is a local HTTP server that checks each delivery's signature
// with its own key, as a real receiver would.
type receiver struct {
	mu         sync.Mutex
	key        []byte
	bodies     [][]byte
	deliveries []string
	fail       int    // answer 503 to this many deliveries first
	answer     string // the body of a 200
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	m := hmac.New(sha256.New, rc.key)
	m.Write([]byte(r.Header.Get("X-Hitch-Timestamp") + "." + string(body)))
	want := "sha256=" + hex.EncodeToString(m.Sum(nil))
	if !hmac.Equal([]byte(want), []byte(r.Header.Get("X-Hitch-Signature"))) {
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	rc.bodies = append(rc.bodies, body)
	rc.deliveries = append(rc.deliveries, r.Header.Get("X-Hitch-Delivery"))
	if rc.fail > 0 {
		rc.fail--
		http.Error(w, "try later", http.StatusServiceUnavailable)
		return
	}
	io.WriteString(w, rc.answer)
}

// TestWebhook: a signed delivery is answered; a wrong secret is refused by
// the receiver (and the hook fails closed); a pre_tool delivery is tried
// again after a 503 with the same delivery id, a post_tool one is not.
func TestWebhook(t *testing.T) {
	t.Parallel()
	key := []byte("the-shared-hook-key-0123456789")
	rc := &receiver{key: key, answer: `{"action":"deny","reason":"the receiver says no"}`}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	v, err := newSet(t, declared.Hook{Name: "remote", Point: declared.PreTool, Webhook: &declared.Webhook{URL: srv.URL, Secret: key}}).
		PreTool(context.Background(), call(`{"command":"ls"}`))
	if err != nil || v.Action != hook.Deny || !strings.Contains(v.Reason, "the receiver says no") {
		t.Fatalf("signed: %+v, %v", v, err)
	}

	ds := decided(t, func(ctx context.Context) {
		v, err = newSet(t, declared.Hook{Name: "wrong", Point: declared.PreTool, Webhook: &declared.Webhook{URL: srv.URL, Secret: []byte("not-the-key-at-all-0123456789")}}).
			PreTool(ctx, call(`{}`))
	})
	if err != nil || v.Action != hook.Deny || len(ds) != 1 || !strings.Contains(ds[0].Error, "401") {
		t.Fatalf("wrong secret: %+v, %v, %+v", v, err, ds)
	}

	rc.mu.Lock()
	rc.fail, rc.answer, rc.deliveries = 1, `{"action":"run"}`, nil
	rc.mu.Unlock()
	v, err = newSet(t, declared.Hook{Name: "flaky", Point: declared.PreTool, Webhook: &declared.Webhook{URL: srv.URL, Secret: key}}).PreTool(context.Background(), call(`{}`))
	rc.mu.Lock()
	got := append([]string(nil), rc.deliveries...)
	rc.fail, rc.deliveries = 1, nil
	rc.mu.Unlock()
	if err != nil || v.Action != hook.Run || len(got) != 2 || got[0] != got[1] {
		t.Fatalf("retried pre_tool: %+v, %v, deliveries %v", v, err, got)
	}
	r, err := newSet(t, declared.Hook{Name: "flaky", Point: declared.PostTool, Webhook: &declared.Webhook{URL: srv.URL, Secret: key}}).
		PostTool(context.Background(), call(`{}`), hook.Result{Output: "kept"})
	rc.mu.Lock()
	n := len(rc.deliveries)
	rc.mu.Unlock()
	if err != nil || r.Output != "kept" || n != 1 {
		t.Fatalf("post_tool: %+v, %v, %d deliveries", r, err, n)
	}
}

// TestWebhookBodyRedacted: a secret in a tool's result never reaches a
// webhook's body; the set redacts every event.
func TestWebhookBodyRedacted(t *testing.T) {
	t.Parallel()
	const canary = "canary-secret-value-0123456789"
	red, err := secret.New(map[string]string{"canary": canary})
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("the-shared-hook-key-0123456789")
	rc := &receiver{key: key}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	s, err := declared.New([]declared.Hook{{Name: "audit", Point: declared.PostTool, Webhook: &declared.Webhook{URL: srv.URL, Secret: key}}}, red.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PostTool(context.Background(), call(`{"command":"echo `+canary+`"}`), hook.Result{Output: "the key is " + canary}); err != nil {
		t.Fatal(err)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bodies) != 1 || strings.Contains(string(rc.bodies[0]), canary) || strings.Contains(string(rc.bodies[0]), string(key)) {
		t.Fatalf("bodies %q", rc.bodies)
	}
}

// TestNewRefuses: New names every problem of the hooks at once.
func TestNewRefuses(t *testing.T) {
	t.Parallel()
	cmd := &declared.Command{Args: []string{"true"}}
	_, err := declared.New([]declared.Hook{
		{Name: "a", Point: "after_lunch", Command: cmd},
		{Name: "a", Point: declared.PreTool, Command: cmd},
		{Name: "b", Point: declared.PreGenerate, Match: []string{"bash"}, Command: cmd},
		{Name: "c", Point: declared.PreTool},
		{Name: "d", Point: declared.PreTool, OnError: "sometimes", Command: cmd},
	}, nil)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"after_lunch", "taken", "match is for", "give a command or a webhook", "sometimes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// TestDocGateExample: the command example of docs/hooks.md denies a
// recursive delete, holds a deploy and lets the rest run.
func TestDocGateExample(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/hooks.md")
	if err != nil {
		t.Fatal(err)
	}
	const start = "```sh\n#!/bin/sh\n# hooks/gate.sh"
	i := strings.Index(string(b), start)
	if i < 0 {
		t.Fatal("docs/hooks.md has no gate.sh example")
	}
	body := string(b)[i+len("```sh\n#!/bin/sh\n"):]
	body = body[:strings.Index(body, "```")]
	s := newSet(t, declared.Hook{Name: "gate", Point: declared.PreTool, Command: script(t, t.TempDir(), "gate.sh", body, nil)})
	for args, want := range map[string]hook.Action{`{"command":"rm -rf build"}`: hook.Deny, `{"command":"make deploy"}`: hook.Hold, `{"command":"ls"}`: hook.Run} {
		v, err := s.PreTool(context.Background(), call(args))
		if err != nil || v.Action != want {
			t.Errorf("%s: %+v, %v", args, v, err)
		}
		if want == hook.Hold && v.Requirement != "release-managers" {
			t.Errorf("hold: %+v", v)
		}
	}
}
