package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitch-dev/hitch/internal/mcptest"
	"github.com/hitch-dev/hitch/tool"
)

// stdioServer declares the test binary itself as a stdio server.
func stdioServer(t *testing.T, env ...string) Server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := Server{Name: "test", Command: exe, Env: map[string]string{mcptest.Env: "1"}}
	for i := 0; i+1 < len(env); i += 2 {
		s.Env[env[i]] = env[i+1]
	}
	return s
}

func connect(t *testing.T, s Server) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Connect(ctx, s)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return c
}

func find(t *testing.T, c *Client, name string) tool.Tool {
	t.Helper()
	for _, tl := range c.Tools() {
		if tl.Info().Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}

func call(t *testing.T, c *Client, name, args string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return find(t, c, name).Call(ctx, json.RawMessage(args))
}

// each runs f against the stdio server and the in-process HTTP server,
// each declared as set makes it.
func each(t *testing.T, set func(*Server), f func(t *testing.T, c *Client)) {
	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		s := stdioServer(t)
		set(&s)
		f(t, connect(t, s))
	})
	t.Run("http", func(t *testing.T) {
		t.Parallel()
		s := newHTTPServer(t).server()
		set(&s)
		f(t, connect(t, s))
	})
}

func asDeclared(*Server) {}

func TestListAndCall(t *testing.T) {
	t.Parallel()
	each(t, asDeclared, func(t *testing.T, c *Client) {
		snap := c.Snapshot()
		if snap.Version != 1 {
			t.Errorf("version %d, want 1", snap.Version)
		}
		var names []string
		for _, tl := range snap.Tools {
			names = append(names, tl.Info().Name)
		}
		want := "test__add_tool test__echo test__env test__fail test__files_read test__huge test__image test__pid test__slow test__structured"
		if got := strings.Join(names, " "); got != want {
			t.Errorf("tools:\n got %s\nwant %s", got, want)
		}

		echo := find(t, c, "test__echo")
		info := echo.Info()
		if info.Replay != DefaultReplay || info.Timeout != DefaultCallTimeout || info.Description != "Echo the text back." {
			t.Errorf("echo info %+v", info)
		}
		if !strings.Contains(string(info.Schema), `"text"`) {
			t.Errorf("echo schema %s", info.Schema)
		}
		h, ok := HintsOf(echo)
		if !ok || !h.ReadOnly || h.Destructive || h.Server != "test" || h.Tool != "echo" {
			t.Errorf("echo hints %+v", h)
		}
		if h, _ := HintsOf(find(t, c, "test__slow")); !h.Destructive || find(t, c, "test__slow").Info().Replay != 0 {
			t.Errorf("slow: hints %+v, replay %d", h, find(t, c, "test__slow").Info().Replay)
		}
		if r := find(t, c, "test__huge").Info().Replay; r != DefaultReplay {
			t.Errorf("huge (idempotent) replay %d", r)
		}
		if s := string(find(t, c, "test__files_read").Info().Schema); s != `{"properties":{},"type":"object"}` {
			t.Errorf("files.read schema %s", s)
		}

		if out, err := call(t, c, "test__echo", `{"text":"héllo"}`); err != nil || out != "héllo" {
			t.Errorf("echo: %q, %v", out, err)
		}
		if out, err := call(t, c, "test__structured", `{}`); err != nil || out != `{"label":"three","n":3}` {
			t.Errorf("structured: %q, %v", out, err)
		}
		if out, err := call(t, c, "test__image", ``); err != nil || out != "a dot:\n[image: image/png, 4 bytes]" {
			t.Errorf("image: %q, %v", out, err)
		}
		if out, err := call(t, c, "test__files_read", `{"path":"a"}`); err != nil || out != `{"path":"a"}` {
			t.Errorf("files.read: %q, %v", out, err)
		}
	})
}

func TestErrors(t *testing.T) {
	t.Parallel()
	each(t, asDeclared, func(t *testing.T, c *Client) {
		out, err := call(t, c, "test__fail", `{}`)
		if err == nil || err.Error() != "it broke" || tool.IsUncertain(err) {
			t.Errorf("fail: %q, %v", out, err)
		}
		// The SDK's server checks arguments itself and answers with a
		// result marked as an error: a definite failure.
		_, err = call(t, c, "test__echo", `{"text":3}`)
		if err == nil || !strings.Contains(err.Error(), "validating") || tool.IsUncertain(err) {
			t.Errorf("echo with a number: %v, want a definite failure", err)
		}
		var ae *tool.ArgumentError
		if _, err = call(t, c, "test__echo", `[1]`); !errors.As(err, &ae) {
			t.Errorf("echo with an array: %v, want an argument error", err)
		}
	})
}

func TestHugeResultIsBounded(t *testing.T) {
	t.Parallel()
	// A small bound keeps the test quick under the race detector;
	// TestBound covers the default.
	const limit = 64 << 10
	each(t, func(s *Server) { s.MaxResult = limit }, func(t *testing.T, c *Client) {
		out, err := call(t, c, "test__huge", `{"bytes":200000}`)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) > limit || len(out) < limit-100 {
			t.Errorf("got %d bytes, want just under %d", len(out), limit)
		}
		if !strings.HasSuffix(out, "of 200000 bytes shown]") {
			t.Errorf("no note at the end: %q", out[len(out)-60:])
		}
	})
}

func TestEnvIsExplicit(t *testing.T) {
	t.Parallel()
	c := connect(t, stdioServer(t, "ONLY_THIS", "1"))
	out, err := call(t, c, "test__env", `{}`)
	if err != nil || out != "HITCH_MCP_TESTSERVER,ONLY_THIS" {
		t.Errorf("env: %q, %v", out, err)
	}
}

func TestCollisionRefused(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := Connect(ctx, stdioServer(t, mcptest.EnvCollide, "1"))
	if err == nil || !strings.Contains(err.Error(), `tools "a.b" and "a_b" both map to the name "test__a_b"`) {
		t.Errorf("got %v", err)
	}
}

// callSlow listens on loopback and calls slow in the background, telling
// it to dial that listener (closed when the test ends); it returns the
// listener and the call's result.
func callSlow(t *testing.T, c *Client) (net.Listener, <-chan error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	done := make(chan error, 1)
	slow := find(t, c, "test__slow")
	go func() {
		_, err := slow.Call(context.Background(), json.RawMessage(`{"addr":"`+l.Addr().String()+`"}`))
		done <- err
	}()
	return l, done
}

// startSlow calls slow in the background and returns the server's process
// id once the call runs there, and the call's result. Closing the returned
// connection lets the tool return.
func startSlow(t *testing.T, c *Client) (int, <-chan error, net.Conn) {
	t.Helper()
	l, done := callSlow(t, c)
	pid, conn := mcptest.AcceptSlow(t, l)
	t.Cleanup(func() { conn.Close() })
	return pid, done, conn
}

func TestStdioKilledMidCallIsUncertainThenRestarts(t *testing.T) {
	t.Parallel()
	c := connect(t, stdioServer(t))
	pid, done, _ := startSlow(t, c)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := <-done
	if !tool.IsUncertain(err) {
		t.Fatalf("slow after a kill: %v, want uncertain", err)
	}
	// The next call, of a tool that is not replayable, starts a new process.
	out, err := call(t, c, "test__pid", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if out == strconv.Itoa(pid) {
		t.Errorf("the same process %s answered", out)
	}
	if v := c.Snapshot().Version; v != 1 {
		t.Errorf("version %d after a restart with the same tools, want 1", v)
	}
}

func TestReplayableRetriedAfterKill(t *testing.T) {
	t.Parallel()
	yes := true
	s := stdioServer(t)
	s.Tools = map[string]ToolOverride{"slow": {Replayable: &yes}}
	l, done := callSlow(t, connect(t, s))
	pid, conn := mcptest.AcceptSlow(t, l)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	// The same call runs again in a new process; let it finish there.
	pid2, conn2 := mcptest.AcceptSlow(t, l)
	if pid2 == pid {
		t.Fatal("retried in the same process")
	}
	conn2.Close()
	if err := <-done; err != nil {
		t.Fatalf("replayable slow after a kill: %v", err)
	}
}

func TestStdioExitBetweenCallsReconnects(t *testing.T) {
	t.Parallel()
	c := connect(t, stdioServer(t))
	out, err := call(t, c, "test__pid", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(out)
	c.mu.Lock()
	s := c.sess
	c.mu.Unlock()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-s.done // the client has seen the process go
	// A tool that is not replayable: the request is never sent to the dead
	// process, so the call is not uncertain.
	out2, err := call(t, c, "test__pid", `{}`)
	if err != nil || out2 == out {
		t.Fatalf("after the exit: %q, %v", out2, err)
	}
}

func TestListChanged(t *testing.T) {
	t.Parallel()
	each(t, asDeclared, func(t *testing.T, c *Client) {
		snap := c.Snapshot()
		if _, err := call(t, c, "test__add_tool", `{"name":"later"}`); err != nil {
			t.Fatal(err)
		}
		select {
		case <-snap.Changed:
		case <-time.After(30 * time.Second):
			t.Fatal("no change seen")
		}
		now := c.Snapshot()
		if now.Version != 2 || len(now.Tools) != len(snap.Tools)+1 {
			t.Fatalf("version %d with %d tools", now.Version, len(now.Tools))
		}
		if out, err := call(t, c, "test__later", `{"text":"hi"}`); err != nil || out != "hi" {
			t.Errorf("later: %q, %v", out, err)
		}
	})
}

// httpServer is the test server behind the SDK's streamable-HTTP handler,
// requiring a bearer token. restart replaces the handler, so every session
// it knew is gone.
type httpServer struct {
	srv     *httptest.Server
	handler atomic.Pointer[http.Handler]
	servers []*sdk.Server // the current one last; only the test's goroutine changes it
}

func newHTTPServer(t *testing.T) *httpServer {
	h := &httpServer{}
	h.restart()
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		(*h.handler.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		h.srv.Close()
		h.closeSessions()
	})
	return h
}

// closeSessions ends the sessions every server had.
func (h *httpServer) closeSessions() {
	for _, s := range h.servers {
		for ss := range s.Sessions() {
			ss.Close()
		}
	}
}

// restart puts a new server behind the handler. The old one's sessions stay
// open (until the test ends) but unreachable: a request naming one is
// answered 404, as by a server that restarted.
func (h *httpServer) restart() {
	s := mcptest.New(false)
	h.servers = append(h.servers, s)
	var handler http.Handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	h.handler.Store(&handler)
}

func (h *httpServer) server() Server {
	return Server{Name: "test", URL: h.srv.URL, Headers: map[string]string{"Authorization": "Bearer s3cret"}}
}

func TestHTTPSessionDroppedReconnects(t *testing.T) {
	t.Parallel()
	h := newHTTPServer(t)
	c := connect(t, h.server())
	c.mu.Lock()
	first := c.sess
	c.mu.Unlock()
	if first.cs.ID() == "" {
		t.Fatal("the server gave no session id")
	}
	h.restart()
	// env is not replayable: the server refused the old session with 404
	// before running anything, so the call goes to a new session.
	if _, err := call(t, c, "test__env", `{}`); err != nil {
		t.Fatalf("env after the restart: %v", err)
	}
	c.mu.Lock()
	second := c.sess
	c.mu.Unlock()
	if second == first || second.cs.ID() == first.cs.ID() {
		t.Fatal("the session was not replaced")
	}
	h.restart()
	if out, err := call(t, c, "test__echo", `{"text":"x"}`); err != nil || out != "x" {
		t.Fatalf("echo after a second restart: %q, %v", out, err)
	}
}

func TestHTTPCutMidCallIsUncertain(t *testing.T) {
	t.Parallel()
	h := newHTTPServer(t)
	c := connect(t, h.server())
	_, done, conn := startSlow(t, c)
	h.srv.CloseClientConnections()
	if err := <-done; !tool.IsUncertain(err) {
		t.Fatalf("slow after the connection was cut: %v, want uncertain", err)
	}
	conn.Close() // the tool was still running on the server
	if out, err := call(t, c, "test__echo", `{"text":"x"}`); err != nil || out != "x" {
		t.Fatalf("echo after the cut: %q, %v", out, err)
	}
}

func TestReconnectBacksOff(t *testing.T) {
	t.Parallel()
	refuse := t.TempDir() + "/refuse"
	c := connect(t, stdioServer(t, mcptest.EnvRefuse, refuse))
	out, err := call(t, c, "test__pid", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(out)
	if err := os.WriteFile(refuse, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	s := c.sess
	c.mu.Unlock()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-s.done

	_, err = call(t, c, "test__pid", `{}`)
	if err == nil || tool.IsUncertain(err) || !strings.Contains(err.Error(), "connect to mcp server") {
		t.Fatalf("with the server refusing to start: %v", err)
	}
	_, err = call(t, c, "test__pid", `{}`)
	if err == nil || !strings.Contains(err.Error(), "unavailable, next attempt in") {
		t.Fatalf("during the backoff: %v", err)
	}
	c.mu.Lock()
	if c.failures != 1 || time.Until(c.nextTry) > ReconnectMinDelay {
		t.Errorf("failures %d, next try in %s", c.failures, time.Until(c.nextTry))
	}
	c.nextTry = time.Time{} // the backoff has passed
	c.mu.Unlock()
	if err := os.Remove(refuse); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, c, "test__pid", `{}`); err != nil {
		t.Fatalf("after the backoff: %v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failures != 0 {
		t.Errorf("failures %d after a success", c.failures)
	}
}
