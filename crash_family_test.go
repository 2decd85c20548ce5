package hitch_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/tool"
)

// familyAgents builds a boss that delegates to a kid whose one tool call
// (not replayable) blocks in the child process when block is set.
func familyAgents(effects string, block bool, marker func(string)) (*hitch.Agent, error) {
	effect, err := tool.New("effect", "Acts once.", func(ctx context.Context, _ struct{}) (string, error) {
		f, err := os.OpenFile(effects, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return "", err
		}
		fmt.Fprintln(f, "effect")
		f.Close()
		if block {
			marker("IN_KID")
			select {}
		}
		return "effect ok", nil
	})
	if err != nil {
		return nil, err
	}
	kid, err := hitch.Build(hitch.Spec{Name: "kid", Tools: []tool.Tool{effect}, Policy: policy.AllowAll(),
		Model: scripted.New("kid", scripted.Script{Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: "effect"}}}, {Text: "kid done"}}})})
	if err != nil {
		return nil, err
	}
	return hitch.Build(hitch.Spec{Name: "boss", SubAgents: []*hitch.Agent{kid}, Policy: policy.AllowAll(),
		Budget: &hitch.Budget{ModelCalls: 10, ToolCalls: 10},
		Model: scripted.New("boss", scripted.Script{Turns: []scripted.Turn{
			{Calls: []scripted.Call{{Name: "kid", Args: `{"prompt": "act"}`}}}, {Text: "boss done"}}})})
}

func familyChild(db, effects string) int {
	ctx := context.Background()
	boss, err := familyAgents(effects, true, func(s string) { fmt.Println(s) })
	if err != nil {
		return childFail(err)
	}
	return childStart(ctx, db, hitch.Config{LeaseTTL: crashLeaseTTL}, boss, "go", hitch.WithID("fam"))
}

// TestCrashInsideAChildRun kills the process while a sub-agent's tool body
// runs. The family recovers in another process: the child's interrupted
// effect is uncertain, reconciling it lets the child and then its parent
// complete, and the family's stored use is what its journals say was
// charged.
func TestCrashInsideAChildRun(t *testing.T) {
	if testing.Short() {
		t.Skip("crash tests start processes")
	}
	t.Parallel()
	dir := t.TempDir()
	db, effects := filepath.Join(dir, "fam.db"), filepath.Join(dir, "effects.log")
	killChildAt(t, "family", "IN_KID", db, effects, 1)

	boss, err := familyAgents(effects, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rt, st := setupAt(t, db, boss)
	for {
		if kid, _ := st.RunGet(ctx, "fam.t1c1"); kid.Status == hitchtype.StatusWaiting {
			break
		}
		if _, err := rt.Recover(ctx); err != nil || ctx.Err() != nil {
			t.Fatal("the child was never recovered", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(kinds(journal(t, rt, "fam.t1c1")), "call.uncertain") {
		t.Fatalf("the child's interrupted effect is not uncertain: %s", kinds(journal(t, rt, "fam.t1c1")))
	}
	if err := rt.Reconcile(ctx, "fam.t1c1", hitch.Reconciliation{Call: "t1c1", Output: "effect ok", By: "test"}); err != nil {
		t.Fatal(err)
	}
	run, err := rt.Await(ctx, "fam")
	if err != nil || run.Status != hitchtype.StatusCompleted || run.Outcome.Answer != "boss done" {
		t.Fatalf("root: %+v %v", run, err)
	}
	if b, _ := os.ReadFile(effects); strings.Count(string(b), "effect") != 1 {
		t.Errorf("the effect ran %d times", strings.Count(string(b), "effect"))
	}
	// boss: 2 model calls, 1 sub-agent start; kid: 2 model calls, 1 body.
	// The stored use is exactly what the family's journals say was charged.
	_, used, _, err := rt.FamilyBudget(ctx, "fam")
	want := journalCharged(t, rt, st, "fam")
	used.WallTime = 0
	if err != nil || used != want || used.ModelCalls != 4 || used.ToolCalls != 2 {
		t.Errorf("family use %+v (%v); the journals say %+v, want 4 model calls and 2 tool calls", used, err, want)
	}
	for _, id := range []string{"fam", "fam.t1c1"} {
		if n := strings.Count(kinds(journal(t, rt, id)), "run.ended"); n != 1 {
			t.Errorf("%s: %d terminal entries", id, n)
		}
	}
}
