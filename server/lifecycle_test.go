package server_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/internal/testproc"
)

// TestGracefulStop: SIGTERM ends an open event stream cleanly (the
// client can resume from its last id elsewhere), readyz and new streams
// are refused while stopping, the runtime drains, and the process exits 0.
func TestGracefulStop(t *testing.T) {
	e := newEnv(t)
	start(t, e.admin, "gate", "hold", "w1")
	wait(t, e.view, "w1")
	resp, err := e.view.openStream(context.Background(), "/v1/runs/w1/events", "")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream: %v %v", err, resp)
	}
	defer resp.Body.Close()
	got := 0
	_ = readEvents(resp.Body, func(ev event) bool { got++; return got < 3 })
	if code := e.p.Stop(); code != 0 {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, e.p.Log())
	}
	// The stream ended with the server, without an error event.
	err = readEvents(resp.Body, func(ev event) bool {
		if ev.kind != api.EventEntry {
			t.Errorf("event %s on a stopping stream: %s", ev.kind, ev.data)
		}
		return true
	})
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("stream ended with %v", err)
	}
	if !strings.Contains(e.p.Log(), "serve: drained; every lease given back") {
		t.Errorf("no drain:\n%s", e.p.Log())
	}
	// The waiting run is intact on the next server.
	p2 := serve(t, e.dir)
	view := &client{t: t, url: p2.URL, token: tokView, spec: e.spec}
	if r := wait(t, view, "w1"); r.Status != "waiting" {
		t.Errorf("w1 after restart: %+v", r)
	}
}

// TestAddressWithoutTokens: without tokens a loopback server serves one
// local admin and warns; a non-loopback address refuses to start (exit 2).
func TestAddressWithoutTokens(t *testing.T) {
	dir := testConfig(t, false)
	cmd := exec.Command(bin(t), "serve", "-c", filepath.Join(dir, "hitch.yaml"), "--addr", "0.0.0.0:0")
	testproc.DieWithParent(cmd)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "not a loopback address") {
		t.Errorf("non-loopback without tokens: %v\n%s", err, out)
	}
	p := serve(t, dir)
	if !strings.Contains(p.Log(), "warning: no server.tokens") {
		t.Errorf("no warning:\n%s", p.Log())
	}
	s := loadSpec(t, p.URL, "")
	local := &client{t: t, url: p.URL, spec: s}
	var out2 api.StartedRun
	local.do("POST", "/v1/runs", api.StartRun{Agent: "quick", Input: "hi"}).want(t, 201, "").decode(t, &out2)
	if out2.Run.Tenant != "default" {
		t.Errorf("local run %+v", out2.Run)
	}
}

// TestTokenSetUp: a token whose variable is not set stops the server
// from starting, naming the token.
func TestTokenSetUp(t *testing.T) {
	dir := testConfig(t, true)
	cmd := exec.Command(bin(t), "serve", "-c", filepath.Join(dir, "hitch.yaml"), "--addr", "127.0.0.1:0")
	testproc.DieWithParent(cmd)
	cmd.Env = append(os.Environ(), "T_ADMIN=", "T_OP=x", "T_B=y")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "server.tokens[0].env: T_ADMIN (token admin)") {
		t.Errorf("unset token variable: %v\n%s", err, out)
	}
}
