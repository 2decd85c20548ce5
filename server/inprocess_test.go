package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/server"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/sqlite"
)

// inProcess is a server in this process over a runtime on a SQLite file.
type inProcess struct {
	st    *sqlite.Store
	srv   *server.Server
	rt    *hitch.Runtime
	close func()
}

func newInProcess(t testing.TB, limits server.Limits) *inProcess {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	echo, err := hitch.Build(hitch.Spec{Name: "echo", Policy: policy.AllowAll(),
		Model: scripted.New("echo", scripted.Script{Turns: []scripted.Turn{{Text: "echoed"}}})})
	if err != nil {
		t.Fatal(err)
	}
	var srv atomic.Pointer[server.Server]
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{echo}, OnEvent: func(ev hitch.Event) {
		if s := srv.Load(); s != nil {
			s.Notify(ev)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Config{Runtime: rt, Store: st, Agents: []*hitch.Agent{echo}, Limits: limits,
		Tokens: []server.Token{{Name: "admin", Tenant: "default", Role: api.RoleAdmin, Hash: server.HashToken(tokAdmin)}}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Store(s)
	return &inProcess{st: st, srv: s, rt: rt, close: func() {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = rt.Close(cctx)
		_ = st.Close()
	}}
}

func (ip *inProcess) do(method, path, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tokAdmin)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	ip.srv.ServeHTTP(w, req)
	return w
}

// TestInProcess serves a runtime from this process over real loopback
// HTTP: a run started and followed, then a stop that ends the open
// stream and refuses new work; nothing is left running afterwards.
func TestInProcess(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ip := newInProcess(t, server.Limits{})
	ts := httptest.NewServer(ip.srv)
	c := &client{t: t, url: ts.URL, token: tokAdmin, spec: loadSpec(t, ts.URL, tokAdmin)}
	var started api.StartedRun
	c.do("POST", "/v1/runs", api.StartRun{Agent: "echo", Input: "hi", ID: "e1"}).want(t, 201, "").decode(t, &started)
	sameEntries(t, follow(t, c, "/v1/runs/e1/events", ""), journalOf(t, c, "e1"))

	// A stream open at the stop ends; readyz, starts and streams are
	// refused while stopping.
	c.do("POST", "/v1/runs", api.StartRun{Agent: "echo", Input: "hi", ID: "e2"}).want(t, 201, "")
	wait(t, c, "e2")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := c.openStream(ctx, "/v1/runs/e2/events", "1")
	if err != nil {
		t.Fatal(err)
	}
	ip.srv.Stop()
	_ = readEvents(resp.Body, func(event) bool { return true })
	resp.Body.Close()
	c.do("GET", "/readyz", nil).want(t, 503, api.TypeUnavailable)
	c.do("POST", "/v1/runs", api.StartRun{Agent: "echo", Input: "hi"}).want(t, 503, api.TypeUnavailable)
	c.do("GET", "/v1/runs/e1/events", nil).want(t, 503, api.TypeUnavailable)
	ts.Close()
	ip.close()
}

// TestHeartbeat: a stream of a run that makes no progress sends heartbeat
// comments, at the configured interval, and nothing else.
func TestHeartbeat(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ip := newInProcess(t, server.Limits{Heartbeat: 20 * time.Millisecond})
	ctx := context.Background()
	// A queued run nobody drives: this test runs no sweeper.
	if _, _, err := ip.st.RunCreate(ctx, store.RunCreateParams{ID: "idle", Agent: "echo", Version: 1, InputHash: "x",
		Entries: []store.EntryInput{{Kind: "run.started", Data: json.RawMessage(`{"agent":"echo","version":1,"input":"x"}`)}}}); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(ip.srv)
	c := &client{t: t, url: ts.URL, token: tokAdmin}
	sctx, cancel := context.WithCancel(ctx)
	resp, err := c.openStream(sctx, "/v1/runs/idle/events", "")
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	var lines []string
	for beats := 0; beats < 3; {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream: %v after %q", err, lines)
		}
		lines = append(lines, strings.TrimSpace(line))
		if strings.TrimSpace(line) == ": heartbeat" {
			beats++
		}
	}
	if !slices.Contains(lines, "id: 1") || slices.Contains(lines, "id: 2") {
		t.Errorf("stream of an idle run: %q", lines)
	}
	cancel()
	resp.Body.Close()
	ts.Close()
	ip.close()
}

func journalOf(t *testing.T, c *client, id string) []api.Entry { return journal(t, c, id) }

// FuzzDecode sends arbitrary bodies to the routes that decode one: no
// panic, every answer is a success or a problem of the table, and every
// refused field is named.
func FuzzDecode(f *testing.F) {
	ip := newInProcess(f, server.Limits{MaxBodyBytes: 4096})
	f.Cleanup(ip.close)
	routes := []string{"/v1/runs", "/v1/runs/nope/reconcile", "/v1/runs/nope/approvals/c/approve",
		"/v1/runs/nope/approvals/c/reject", "/v1/runs/nope/workspace/grant"}
	for i, seed := range []string{
		`{"agent":"echo","input":"hi","id":"f1"}`, `{"call":"c","unconfirmed":true}`,
		`{"credential":{"name":"a","secret":"b"}}`, `{"credential":{"name":"a","secret":"b"},"reason":"no"}`,
		`{"path":"/tmp"}`, `{"agent":5}`, `[]`, `null`, `{"input":"\u0000"}`, `{"agent":"echo","input":"x","id":"a/b"}`,
	} {
		f.Add(uint8(i), []byte(seed))
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		path := routes[int(route)%len(routes)]
		w := ip.do("POST", path, string(body))
		if w.Code < 400 {
			return
		}
		var p api.Problem
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
			t.Fatalf("%s %q: %d not a problem: %s", path, body, w.Code, w.Body)
		}
		c, ok := api.ClassOf(p.Type)
		if !ok || c.Status != w.Code || w.Header().Get("Content-Type") != api.ProblemContentType {
			t.Fatalf("%s %q: %d %s: not a problem of the table", path, body, w.Code, w.Body)
		}
		if p.Type == api.TypeInternal {
			t.Fatalf("%s %q: internal error", path, body)
		}
		if p.Type == api.TypeInvalid {
			if len(p.Errors) == 0 {
				t.Fatalf("%s %q: a refusal names no field: %s", path, body, w.Body)
			}
			for _, fe := range p.Errors {
				if !strings.HasPrefix(fe.Location, "body") && !strings.HasPrefix(fe.Location, "path") {
					t.Fatalf("%s %q: refusal without a field: %s", path, body, w.Body)
				}
			}
		}
		if bytes.Contains(w.Body.Bytes(), []byte("panic")) {
			t.Fatalf("%s %q: %s", path, body, w.Body)
		}
	})
}
