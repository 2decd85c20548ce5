package mcp_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/hitchtest"
	"github.com/hitch-dev/hitch/internal/mcptest"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/tool"
	"github.com/hitch-dev/hitch/tool/mcp"
)

// A replayable MCP call whose server dies after the request left is run
// again by the runtime, not behind its back: the journal keeps the lost
// attempt (call.lost, with why) before the next call.started.
func TestLostReplayableAttemptIsJournaled(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := mcp.Connect(ctx, mcp.Server{Name: "test", Command: exe, Env: map[string]string{mcptest.Env: "1"},
		Tools: map[string]mcp.ToolOverride{"slow": {Replayable: &yes}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	args, _ := json.Marshal(map[string]string{"addr": l.Addr().String()})
	m := scripted.New("m", scripted.Script{Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: "test__slow", Args: string(args)}}}, {Text: "done"}}})
	var tools []tool.Tool
	for _, tl := range c.Tools() {
		if tl.Info().Name == "test__slow" {
			tools = append(tools, tl)
		}
	}
	a, err := hitch.Build(hitch.Spec{Name: "a", Model: m, Tools: tools, Policy: policy.AllowAll()})
	if err != nil {
		t.Fatal(err)
	}
	rt, st := hitchtest.New(t, hitch.Config{Agents: []*hitch.Agent{a}})
	res, err := rt.Start(ctx, a, "go")
	if err != nil {
		t.Fatal(err)
	}
	pid, conn := mcptest.AcceptSlow(t, l)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	pid2, conn2 := mcptest.AcceptSlow(t, l) // the next attempt, on a new server process
	if pid2 == pid {
		t.Fatal("run again in the dead process")
	}
	conn2.Close()
	run, err := rt.Await(ctx, res.Run.ID)
	if err != nil || run.Status != hitchtype.StatusCompleted {
		t.Fatalf("run: %s %v", run.Status, err)
	}
	es, err := st.JournalRead(ctx, store.JournalReadParams{RunID: run.ID})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	var lost hitchtype.CallLost
	for _, e := range es {
		kinds = append(kinds, e.Kind)
		if e.Kind == hitchtype.KindCallLost {
			_ = json.Unmarshal(e.Data, &lost)
		}
	}
	if k := strings.Join(kinds, " "); !strings.Contains(k, "call.started call.lost call.started call.settled") {
		t.Fatalf("journal: %s", k)
	}
	if lost.Attempt != 1 || !strings.Contains(lost.Reason, `mcp server "test"`) {
		t.Errorf("lost attempt %+v", lost)
	}
}
