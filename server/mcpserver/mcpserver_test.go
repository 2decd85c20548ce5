package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/server/mcpserver"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixture is a runtime with one agent whose "charge" tool needs a person's
// approval, served over MCP to the SDK's own client.
type fixture struct {
	client  *mcp.ClientSession
	server  *mcp.Server
	charges *atomic.Int64
}

func newFixture(t *testing.T, cred *approval.Credential) *fixture {
	t.Helper()
	ctx := context.Background()
	charges := new(atomic.Int64)
	charge := tool.MustNew("charge", "Charges a card.", func(context.Context, struct{}) (string, error) {
		charges.Add(1)
		return "charged", nil
	})
	approvers, err := approval.NewStatic(approval.Member{Name: "alice", Secret: "a-secret", Requirements: []string{"payments"}})
	if err != nil {
		t.Fatal(err)
	}
	agent, err := hitch.Build(hitch.Spec{
		Name:  "pay",
		Model: scripted.New("pay", scripted.Script{Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: "charge"}}}, {Text: "paid"}}}),
		Tools: []tool.Tool{charge},
		Policy: policy.Rules{
			{Tools: []string{"charge"}, Verdict: policy.RequireApproval, Requirement: "payments"},
			{Tools: []string{"*"}, Verdict: policy.Allow},
		},
		Approvers: approvers,
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "hitch.db"))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{agent}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(mcpserver.Options{Scope: rt.As(hitch.Principal{Name: "test", Tenant: hitch.AllTenants, Role: hitch.RoleAdmin}), Agents: []*hitch.Agent{agent}, Credential: cred, MaxWait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	st1, st2 := mcp.NewInMemoryTransports()
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Run(sctx, st1) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, st2, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		stop()
		<-served
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = rt.Close(cctx)
		_ = st.Close()
	})
	return &fixture{client: cs, server: srv, charges: charges}
}

// call calls a tool and decodes its structured answer into out; it returns
// the error text of a tool that reported one.
func (f *fixture) call(t *testing.T, name string, args map[string]any, out any) string {
	t.Helper()
	res, err := f.client.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		var texts []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				texts = append(texts, tc.Text)
			}
		}
		return strings.Join(texts, " ")
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: decode %s: %v", name, b, err)
	}
	return ""
}

func TestStartWaitApproveOverMCP(t *testing.T) {
	f := newFixture(t, &approval.Credential{Name: "alice", Secret: "a-secret"})
	ctx := context.Background()
	tools, err := f.client.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, " "); got != "answer_approval cancel_run list_approvals run_status start_run wait_run" {
		t.Fatalf("tools: %s", got)
	}

	var started mcpserver.StartOut
	if e := f.call(t, "start_run", map[string]any{"agent": "pay", "input": "pay the invoice", "id": "job-1"}, &started); e != "" {
		t.Fatal(e)
	}
	if started.RunID != "job-1" || !started.Created {
		t.Fatalf("start: %+v", started)
	}
	var again mcpserver.StartOut
	f.call(t, "start_run", map[string]any{"agent": "pay", "input": "pay the invoice", "id": "job-1"}, &again)
	if again.Created || !again.SameInput {
		t.Fatalf("a retried start created a run: %+v", again)
	}

	var parked mcpserver.RunView
	if e := f.call(t, "wait_run", map[string]any{"run_id": "job-1"}, &parked); e != "" {
		t.Fatal(e)
	}
	if parked.Status != "waiting" || len(parked.Waiting) != 1 || parked.Waiting[0].Tool != "charge" || f.charges.Load() != 0 {
		t.Fatalf("parked: %+v, charges %d", parked, f.charges.Load())
	}
	var list mcpserver.ListOut
	f.call(t, "list_approvals", map[string]any{"run_id": "job-1"}, &list)
	if len(list.Approvals) != 1 || list.Approvals[0].Requirement != "payments" {
		t.Fatalf("list: %+v", list)
	}

	var answered mcpserver.RunView
	call := parked.Waiting[0].Call
	if e := f.call(t, "answer_approval", map[string]any{"run_id": "job-1", "call": call, "approve": true}, &answered); e != "" {
		t.Fatal(e)
	}
	var done mcpserver.RunView
	if e := f.call(t, "wait_run", map[string]any{"run_id": "job-1", "timeout_seconds": 10}, &done); e != "" {
		t.Fatal(e)
	}
	if done.Status != "completed" || done.Answer != "paid" || !done.Done || f.charges.Load() != 1 {
		t.Fatalf("done: %+v, charges %d", done, f.charges.Load())
	}
	if e := f.call(t, "answer_approval", map[string]any{"run_id": "job-1", "call": call, "approve": true}, &answered); !strings.Contains(e, "already answered") {
		t.Fatalf("a second answer: %q", e)
	}
	var status mcpserver.RunView
	f.call(t, "run_status", map[string]any{"run_id": "job-1"}, &status)
	if status.Usage == nil || status.Usage.Generations != 2 {
		t.Fatalf("status: %+v", status)
	}
}

func TestRefusalsOverMCP(t *testing.T) {
	f := newFixture(t, nil)
	var out mcpserver.StartOut
	if e := f.call(t, "start_run", map[string]any{"agent": "nobody", "input": "x"}, &out); !strings.Contains(e, "not offered here; agents: pay") || strings.Contains(e, "nobody") {
		t.Errorf("unknown agent: %q", e)
	}
	if e := f.call(t, "start_run", map[string]any{"agent": "pay", "input": ""}, &out); !strings.Contains(e, "input is empty") {
		t.Errorf("empty input: %q", e)
	}
	var v mcpserver.RunView
	if e := f.call(t, "run_status", map[string]any{"run_id": "missing"}, &v); !strings.Contains(e, "not found") {
		t.Errorf("missing run: %q", e)
	}
	f.call(t, "start_run", map[string]any{"agent": "pay", "input": "x", "id": "r2"}, &out)
	f.call(t, "wait_run", map[string]any{"run_id": "r2"}, &v)
	if e := f.call(t, "answer_approval", map[string]any{"run_id": "r2", "call": v.Waiting[0].Call, "approve": true}, &v); !strings.Contains(e, "no approver identity") {
		t.Errorf("answer without a credential: %q", e)
	}
	if e := f.call(t, "wait_run", map[string]any{"run_id": "r2", "timeout_seconds": -1}, &v); !strings.Contains(e, "timeout_seconds -1") {
		t.Errorf("negative wait: %q", e)
	}
	var cancelled mcpserver.RunView
	f.call(t, "cancel_run", map[string]any{"run_id": "r2"}, &cancelled)
	if cancelled.Status != "cancelled" || f.charges.Load() != 0 {
		t.Errorf("cancel: %+v", cancelled)
	}
}

// TestServedOverStreamableHTTP mounts the server on an HTTP handler, as an
// HTTP service would, and drives it with the SDK's streamable client.
func TestServedOverStreamableHTTP(t *testing.T) {
	srv := newFixture(t, nil).server
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(h)
	defer ts.Close()
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "http", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "start_run", Arguments: map[string]any{"agent": "pay", "input": "x", "id": "h-1"}})
	if err != nil || res.IsError {
		t.Fatalf("start over HTTP: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "wait_run", Arguments: map[string]any{"run_id": "h-1"}})
	if err != nil || res.IsError {
		t.Fatalf("wait over HTTP: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(b), `"status":"waiting"`) {
		t.Fatalf("wait over HTTP: %s", b)
	}
}
