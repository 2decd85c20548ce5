package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hitch-dev/hitch/api"
)

// TestHeldCallReleasedOverHTTP: a config's pre_tool command holds a bash
// call; POST /v1/runs/{id}/calls/{call}/complete with execute releases it,
// the body runs once and the run completes; a second release is refused
// and runs nothing.
func TestHeldCallReleasedOverHTTP(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"hitch.yaml": `store: runs.db
models:
  held: {provider: scripted, script: held.yaml}
agents:
  - name: held
    model: held
    tools: [bash]
    workspace: ws
    policy: allow_all
    hooks:
      - {name: board, point: pre_tool, match: [bash], command: [./hold.sh]}
server:
  tokens:
    - {name: admin, role: admin, env: T_ADMIN}
    - {name: op, role: operator, env: T_OP}
    - {name: other, tenant: b, role: admin, env: T_B}
`,
		"held.yaml": "turns:\n  - calls: [{name: bash, args: '{\"command\": \"echo ran >> effects.txt\"}'}]\n  - text: held done\n",
		"hold.sh":   "#!/bin/sh\necho '{\"action\": \"hold\", \"reason\": \"the change board decides\"}'\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := serve(t, dir)
	s := loadSpec(t, p.URL, tokAdmin)
	admin := &client{t: t, url: p.URL, token: tokAdmin, spec: s}
	op := &client{t: t, url: p.URL, token: tokOp, spec: s}
	other := &client{t: t, url: p.URL, token: tokB, spec: s}

	start(t, admin, "held", "go", "h1")
	if r := wait(t, admin, "h1"); r.Status != "waiting" {
		t.Fatalf("run %+v, want waiting on the held call", r)
	}
	other.do("POST", "/v1/runs/h1/calls/t1c1/complete", api.CompleteCall{Execute: true}).want(t, 404, api.TypeNotFound)
	op.do("POST", "/v1/runs/h1/calls/t1c1/complete", api.CompleteCall{Execute: true, By: "board"}).want(t, 200, "")
	if r := wait(t, admin, "h1"); r.Status != "completed" {
		t.Fatalf("run %+v, want completed", r)
	}
	op.do("POST", "/v1/runs/h1/calls/t1c1/complete", api.CompleteCall{Execute: true}).want(t, 409, api.TypeRefused)
	b, _ := os.ReadFile(filepath.Join(dir, "ws", "effects.txt"))
	if string(b) != "ran\n" {
		t.Errorf("effects %q, want the body once", b)
	}
	var kinds []string
	for _, e := range journal(t, admin, "h1") {
		kinds = append(kinds, e.Kind)
		if e.Kind == "call.hooked" && !strings.Contains(string(e.Data), `"hook":"board"`) {
			t.Errorf("call.hooked does not name the hook: %s", e.Data)
		}
	}
	if got := strings.Join(kinds, " "); !strings.Contains(got, "call.hooked call.decided run.waiting") || !strings.Contains(got, "approval.granted") {
		t.Errorf("journal: %s", got)
	}
}
