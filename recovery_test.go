package hitch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/tool"
)

// requestLog wraps a model and writes every request it is sent, as one
// line of JSON, to w before the model sees it. From the third turn on it
// calls stall (when set) instead of answering.
type requestLog struct {
	model.Model
	mu    sync.Mutex
	w     func([]byte)
	stall func()
}

func (l *requestLog) Generate(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	b, err := json.Marshal(req)
	if err != nil {
		panic(err)
	}
	l.mu.Lock()
	l.w(b)
	l.mu.Unlock()
	if l.stall != nil && assistantTurns(req) >= 2 {
		l.stall()
	}
	return l.Model.Generate(ctx, req)
}

func assistantTurns(req *model.Request) int {
	n := 0
	for _, m := range req.Messages {
		if m.Role == model.RoleAssistant {
			n++
		}
	}
	return n
}

// replayAgent: two turns of tool calls (one rejected, one settled), then
// an answer, under agent and caller instructions.
func replayAgent(m model.Model) (*hitch.Agent, error) {
	add, err := tool.New("add", "Adds two integers.", func(_ context.Context, in addArgs) (int, error) { return in.A + in.B, nil })
	if err != nil {
		return nil, err
	}
	return hitch.Build(hitch.Spec{Name: "replay", Model: m, Tools: []tool.Tool{add}, Policy: policy.AllowAll(),
		Instructions: "Add carefully."})
}

var replayScript = scripted.Script{Turns: []scripted.Turn{
	{Text: "adding", Calls: []scripted.Call{{Name: "add", Args: `{"a":1,"b":2}`}, {Name: "sub", Args: `{}`}}},
	{Calls: []scripted.Call{{Name: "add", Args: `{"a":3,"b":"x"}`}}},
	{Text: "3"},
}}

// replayChild runs one run until its third model request, which it logs
// and then holds until the process is killed.
func replayChild(db, requests string) int {
	ctx := context.Background()
	f, err := os.OpenFile(requests, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return childFail(err)
	}
	m := &requestLog{Model: scripted.New("replay", replayScript),
		w:     func(b []byte) { f.Write(append(b, '\n')); f.Sync() },
		stall: func() { fmt.Println("IN_TURN3"); select {} }}
	a, err := replayAgent(m)
	if err != nil {
		return childFail(err)
	}
	return childStart(ctx, db, hitch.Config{LeaseTTL: crashLeaseTTL}, a, "add 1 and 2", hitch.WithID("replay"), hitch.WithInstructions("Answer with a number."))
}

// TestRecoveryRebuildsTheSameRequest (invariant 7): a process is killed
// while its third model request is in flight; another process recovers
// the run from the journal, and the request it sends is byte for byte the
// one the first process sent.
func TestRecoveryRebuildsTheSameRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("crash tests start processes")
	}
	t.Parallel()
	dir := t.TempDir()
	db, requests := filepath.Join(dir, "replay.db"), filepath.Join(dir, "requests.jsonl")
	killChildAt(t, "replay", "IN_TURN3", db, requests, 1)
	b, err := os.ReadFile(requests)
	if err != nil {
		t.Fatal(err)
	}
	sent := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(sent) != 3 {
		t.Fatalf("the first process sent %d requests, want 3", len(sent))
	}

	var again [][]byte
	m := &requestLog{Model: scripted.New("replay", replayScript), w: func(b []byte) { again = append(again, b) }}
	a, err := replayAgent(m)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// This process's store clock runs a minute ahead, past the dead
	// process's lease.
	rt, _ := reopenAhead(t, db, time.Minute, a)
	recoverOne(t, ctx, rt)
	run, err := rt.Await(ctx, "replay")
	if err != nil || run.Status != hitchtype.StatusCompleted || run.Outcome.Answer != "3" {
		t.Fatalf("recovered run: %+v %v", run, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(again) != 1 {
		t.Fatalf("the recovering process sent %d requests, want 1", len(again))
	}
	if !bytes.Equal(again[0], sent[2]) {
		t.Errorf("the rebuilt request differs:\nbefore %s\nafter  %s", sent[2], again[0])
	}
}
