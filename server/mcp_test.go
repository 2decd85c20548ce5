package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitch-dev/hitch/api"
)

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// TestMCPMount: the MCP tools of hitch mcp answer at /mcp over
// streamable HTTP, behind the same bearer auth: an admin starts and waits
// for a run; other roles and tenants, and requests without a token, are
// refused.
func TestMCPMount(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tr := &mcp.StreamableClientTransport{Endpoint: e.p.url + "/mcp", DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: bearer{tokAdmin, http.DefaultTransport}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, tr, nil)
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
	call("start_run", map[string]any{"agent": "quick", "input": "hi", "id": "m1"})
	if done := call("wait_run", map[string]any{"run_id": "m1", "timeout_seconds": 30}); done["status"] != "completed" {
		t.Fatalf("m1: %v", done)
	}
	// The run is the API's too.
	if r := wait(t, e.view, "m1"); r.Outcome == nil || r.Outcome.Answer != "quick done" {
		t.Errorf("m1 by the API: %+v", r)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	for _, c := range []struct {
		cl     *client
		status int
		typ    string
	}{
		{&client{t: t, url: e.p.url}, 401, api.TypeUnauthorized},
		{e.view, 403, api.TypeForbidden},
		{e.op, 403, api.TypeForbidden},
		{e.other, 403, api.TypeForbidden},
	} {
		c.cl.spec = nil
		c.cl.do("POST", "/mcp", body, "Accept", "application/json, text/event-stream").want(t, c.status, c.typ)
	}
}
