package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// runs show --server prints what runs show prints from the store: calls,
// budget and what is left, read from the API; and the run's own limits,
// which only the server, holding the agents, knows.
func TestRemoteRunsShow(t *testing.T) {
	url, dir := serveFiles(t, map[string]string{
		"hitch.yaml": `store: runs.db
models:
  ops: {provider: scripted, script: ops.yaml}
agents:
  - {name: ops, model: ops, policy: allow_all, tools: [glob], workspace: ., budget: {model_calls: 10, tool_calls: 5, wall_time: 1h}}
sandbox:
  require_isolation: false
server:
  tokens:
    - {name: admin, role: admin, env: T_REMOTE_ADMIN}
    - {name: view, role: viewer, env: T_REMOTE_VIEW}
`,
		"ops.yaml": "turns:\n  - calls: [{name: glob, args: '{\"pattern\": \"*.yaml\"}'}, {name: glob, args: '{\"pattern\": \"*.db\"}'}]\n  - text: ops done\n",
	})
	t.Setenv("HITCH_SERVER", "")
	t.Setenv("HITCH_TOKEN", remoteAdmin)
	if code, out, errOut := cli(t, "--server", url, "run", "--agent", "ops", "--id", "o1", "look"); code != 0 {
		t.Fatalf("run: %d\n%s\n%s", code, out, errOut)
	}
	t.Setenv("HITCH_TOKEN", remoteViewer)
	code, remote, errOut := cli(t, "--server", url, "runs", "show", "o1")
	if code != 0 {
		t.Fatalf("runs show --server: %d\n%s", code, errOut)
	}
	code, local, errOut := cli(t, "runs", "show", "o1", "--db", filepath.Join(dir, "runs.db"))
	if code != 0 {
		t.Fatalf("runs show: %d\n%s", code, errOut)
	}
	for _, line := range strings.Split(strings.TrimSpace(local), "\n") {
		if !strings.Contains(remote, line) {
			t.Errorf("runs show --server lacks %q\nlocal:\n%s\nremote:\n%s", line, local, remote)
		}
	}
	for _, want := range []string{
		"t1c1", "t1c2", "settled",
		"budget   family model calls: 2 of 10 used, 8 left",
		"budget   family tool calls: 2 of 5 used, 3 left",
		"budget   family wall time: ",
		"budget   this run model attempts: 2 of 8 used, 6 left",
	} {
		if !strings.Contains(remote, want) {
			t.Errorf("runs show --server lacks %q:\n%s", want, remote)
		}
	}

	code, out, _ := cli(t, "--server", url, "--json", "runs", "show", "o1")
	var v struct {
		Run    struct{ ID string }
		Calls  []struct{ Call, State string }
		Budget struct {
			Limits, Used struct {
				ModelCalls int64 `json:"model_calls"`
			}
		}
		Bounds []struct {
			Scope, Name string
			Limit       float64
			Used, Left  *float64
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
		t.Fatalf("runs show --server --json: %d %s", code, out)
	}
	if v.Run.ID != "o1" || len(v.Calls) != 2 || v.Calls[0].State != "settled" || v.Budget.Limits.ModelCalls != 10 || v.Budget.Used.ModelCalls != 2 || len(v.Bounds) != 4 {
		t.Errorf("runs show --server --json: %s", out)
	}
	for _, b := range v.Bounds {
		if b.Used == nil || b.Left == nil {
			t.Errorf("bound %s.%s: used or left not reported: %s", b.Scope, b.Name, out)
		}
	}
}
