package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/internal/mcptest"
)

// callTool calls a tool; the text is the error's when the tool refused.
func callTool(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) (out map[string]any, refusal string) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				refusal += tc.Text
			}
		}
		return nil, refusal
	}
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &out)
	return out, ""
}

// TestMCPMount: the MCP tools of hitch mcp answer at /mcp over
// streamable HTTP, behind the same bearer auth and the same gate as /v1:
// an admin starts and waits for a run; a viewer reads it and is refused
// commands; another tenant's token finds none of it, exactly as an id
// nobody uses, and answers nothing of it; no token is refused.
func TestMCPMount(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := mcptest.Connect(t, ctx, e.p.URL, tokAdmin)
	must := func(cs *mcp.ClientSession, name string, args map[string]any) map[string]any {
		t.Helper()
		out, refusal := callTool(t, ctx, cs, name, args)
		if refusal != "" {
			t.Fatalf("%s: refused: %s", name, refusal)
		}
		return out
	}
	must(admin, "start_run", map[string]any{"agent": "quick", "input": "hi", "id": "m1"})
	if done := must(admin, "wait_run", map[string]any{"run_id": "m1", "timeout_seconds": 30}); done["status"] != "completed" {
		t.Fatalf("m1: %v", done)
	}
	// The run is the API's too.
	if r := wait(t, e.view, "m1"); r.Outcome == nil || r.Outcome.Answer != "quick done" {
		t.Errorf("m1 by the API: %+v", r)
	}
	start(t, e.admin, "gate", "deploy", "g1")
	if r := wait(t, e.view, "g1"); r.Status != "waiting" {
		t.Fatalf("g1: %+v", r)
	}
	view := mcptest.Connect(t, ctx, e.p.URL, tokView)
	if got := must(view, "run_status", map[string]any{"run_id": "m1"}); got["status"] != "completed" {
		t.Errorf("a viewer's run_status: %v", got)
	}
	if got := must(view, "list_approvals", map[string]any{}); len(got["approvals"].([]any)) != 1 {
		t.Errorf("a viewer's list_approvals: %v", got)
	}
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{"start_run", map[string]any{"agent": "quick", "input": "hi"}},
		{"cancel_run", map[string]any{"run_id": "g1"}},
		{"answer_approval", map[string]any{"run_id": "g1", "call": "t1c1", "approve": false}},
	} {
		if _, refusal := callTool(t, ctx, view, c.name, c.args); !strings.Contains(refusal, "forbidden") {
			t.Errorf("a viewer's %s: %q", c.name, refusal)
		}
	}
	// Tenant b: every tool answers for a's run exactly as for a missing
	// one, and lists hold nothing of a's.
	other := mcptest.Connect(t, ctx, e.p.URL, tokB)
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{"run_status", map[string]any{"run_id": "ID"}},
		{"wait_run", map[string]any{"run_id": "ID", "timeout_seconds": 1}},
		{"cancel_run", map[string]any{"run_id": "ID"}},
		{"list_approvals", map[string]any{"run_id": "ID"}},
		{"answer_approval", map[string]any{"run_id": "ID", "call": "t1c1", "approve": false}},
	} {
		with := func(id string) map[string]any {
			args := map[string]any{}
			for k, v := range c.args {
				if v == "ID" {
					v = id
				}
				args[k] = v
			}
			return args
		}
		_, theirs := callTool(t, ctx, other, c.name, with("g1"))
		_, none := callTool(t, ctx, other, c.name, with("zz"))
		if theirs == "" || theirs != none || strings.Contains(theirs, "g1") {
			t.Errorf("tenant b's %s: on a's run %q, on a missing one %q", c.name, theirs, none)
		}
	}
	if got := must(other, "list_approvals", map[string]any{}); len(got["approvals"].([]any)) != 0 {
		t.Errorf("tenant b lists a's approvals: %v", got)
	}
	// Tenant b starting g1 starts its own, and a's g1 is untouched.
	if got := must(other, "start_run", map[string]any{"agent": "quick", "input": "mine", "id": "g1"}); got["created"] != true {
		t.Errorf("tenant b starting g1: %v", got)
	}
	if r := wait(t, e.view, "g1"); r.Status != "waiting" {
		t.Errorf("a's g1 after b's start: %+v", r)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	anon := &client{t: t, url: e.p.URL}
	anon.do("POST", "/mcp", body, "Accept", "application/json, text/event-stream").want(t, 401, api.TypeUnauthorized)
}
