package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitch-dev/hitch/internal/testproc"
)

// TestMCPServesTheConfigsAgents drives the real binary's `hitch mcp` with
// the SDK's own client over stdio: start a run, wait for it to park on an
// approval, approve it with the server's credential, see it complete.
func TestMCPServesTheConfigsAgents(t *testing.T) {
	testproc.Heavy(t, "builds the binary")
	dir := t.TempDir()
	bin := binary(t)
	files := map[string]string{
		"hitch.yaml": bashAgent("runs.db", "ops") + `    policy:
      - {tools: [bash], verdict: approval, requirement: shell}
    approvers:
      - {name: ann, secret: ann-secret, requirements: [shell]}
`,
		"script.yaml": `turns:
  - calls: [{name: bash, args: '{"command": "echo done >> effects.log"}'}]
  - text: finished
`,
	}
	writeFilesIn(t, dir, files)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.Command(bin, "mcp", "-c", filepath.Join(dir, "hitch.yaml"))
	testproc.DieWithParent(cmd)
	cmd.Env = append(os.Environ(), "HITCH_CREDENTIAL=ann:ann-secret")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			b, _ := json.Marshal(res)
			t.Fatalf("%s: %v %s", name, err, b)
		}
		var out map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &out)
		return out
	}
	call("start_run", map[string]any{"agent": "ops", "input": "record it", "id": "m-1"})
	parked := call("wait_run", map[string]any{"run_id": "m-1"})
	waiting, _ := parked["waiting_for_approval"].([]any)
	if parked["status"] != "waiting" || len(waiting) != 1 {
		t.Fatalf("parked: %v", parked)
	}
	callID := waiting[0].(map[string]any)["call"].(string)
	call("answer_approval", map[string]any{"run_id": "m-1", "call": callID, "approve": true})
	done := call("wait_run", map[string]any{"run_id": "m-1", "timeout_seconds": 30})
	if done["status"] != "completed" || done["answer"] != "finished" {
		t.Fatalf("done: %v", done)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "effects.log")); strings.Count(string(b), "done") != 1 {
		t.Fatalf("effects: %q", b)
	}
}
