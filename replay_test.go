package hitch_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/tool"
)

// sendTurns is sendScript's play with turn 2's first argument and the
// answer given.
func sendTurns(name, second, answer string) *scripted.Model {
	return scripted.New(name, scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{{Name: "send", Args: `{"n":"a"}`}}},
		{Calls: []scripted.Call{{Name: "send", Args: `{"n":"` + second + `"}`}, {Name: "send", Args: `{"n":"c"}`}}},
		{Text: answer},
	}})
}

func TestReplayJudgesEachVersionWithoutRunningAnything(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "sent")
	var asked atomic.Int64
	// Every version after the first asks a person for every call: a
	// replay must never get that far.
	askAll := policy.Func(func(context.Context, policy.Action) (policy.Decision, error) {
		asked.Add(1)
		return policy.Decision{Verdict: policy.RequireApproval, Requirement: "payments", Reason: "ask"}, nil
	})
	version := func(v int, m *scripted.Model, pol policy.Policy) *hitch.Agent {
		return build(t, hitch.Spec{Name: "mailer", Version: v, Model: m, Tools: []tool.Tool{sendTool(t, file)}, Policy: pol, Approvers: members(t)})
	}
	v1 := version(1, sendTurns("v1", "b", "sent three"), policy.AllowAll())
	rt, _ := setup(t, v1,
		version(2, sendTurns("v2", "b", "sent three"), askAll),
		version(3, sendTurns("v3", "B", "sent three"), askAll),
		version(4, sendTurns("v4", "b", "all three sent"), askAll))
	var recorded []string
	for _, in := range []string{"first", "second"} {
		run := runToRest(t, rt, v1, in)
		if run.Status != hitchtype.StatusCompleted {
			t.Fatalf("recording: %s %+v", run.Status, run.Outcome)
		}
		recorded = append(recorded, run.ID)
	}
	sent := len(effects(t, file, 0))
	ctx := context.Background()

	same, err := rt.Replay(ctx, hitch.ReplayOptions{Filter: &hitch.RunsParams{Agent: "mailer"}, Version: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(same) != 2 {
		t.Fatalf("%d results, want one per recorded run: %+v", len(same), same)
	}
	for _, r := range same {
		if r.Verdict != hitch.ReplaySame || r.Version != 2 || !slices.Contains(recorded, r.Run) {
			t.Errorf("same script: %+v", r)
		}
		if r.RecordedUsage.InputTokens == nil || r.ReplayUsage.InputTokens == nil || *r.ReplayUsage.InputTokens != *r.RecordedUsage.InputTokens {
			t.Errorf("usage: recorded %+v, replay %+v", r.RecordedUsage, r.ReplayUsage)
		}
		if k := kinds(journal(t, rt, r.Replay)); strings.Contains(k, "call.started") || strings.Contains(k, "call.decided") {
			t.Errorf("replay %s decided or started a call: %s", r.Replay, k)
		}
	}

	diverged, err := rt.Replay(ctx, hitch.ReplayOptions{Runs: recorded[:1], Version: 3})
	if err != nil {
		t.Fatal(err)
	}
	d := diverged[0]
	if d.Verdict != hitch.ReplayDiverged || d.Turn != 2 ||
		d.Recorded != `send({"n":"b"}), send({"n":"c"})` || d.Replayed != `send({"n":"B"}), send({"n":"c"})` {
		t.Errorf("changed argument at turn 2: %+v", d)
	}
	if d.ReplayOutcome == nil || d.ReplayOutcome.Reason != "diverged" || !strings.Contains(d.ReplayOutcome.Error, "t2c1") {
		t.Errorf("the diverged replay's outcome: %+v", d.ReplayOutcome)
	}

	changed, err := rt.Replay(ctx, hitch.ReplayOptions{Runs: recorded[:1], Version: 4})
	if err != nil {
		t.Fatal(err)
	}
	if c := changed[0]; c.Verdict != hitch.ReplayAnswerChanged || c.ReplayOutcome.Answer != "all three sent" || c.RecordedOutcome.Answer != "sent three" {
		t.Errorf("changed answer: %+v", c)
	}

	if n := len(effects(t, file, 0)); n != sent {
		t.Errorf("replays ran %d tool bodies, want none", n-sent)
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the policy was asked %d times during replays, want none", n)
	}
	if p, _, err := rt.PendingApprovals(ctx, hitch.PendingApprovalsParams{}); err != nil || len(p) != 0 {
		t.Errorf("pending approvals after replays: %v %v", p, err)
	}
	// Replays are not replayed again by a filter.
	again, err := rt.Replay(ctx, hitch.ReplayOptions{Filter: &hitch.RunsParams{Agent: "mailer"}, Version: 2})
	if err != nil || len(again) != 2 {
		t.Errorf("a filter after replays: %d results, %v", len(again), err)
	}
}

type verdictAnswer struct {
	Label string  `json:"label"`
	Score float64 `json:"score"`
}

func TestReplayNamesTheChangedFieldsOfATypedAnswer(t *testing.T) {
	t.Parallel()
	typed := func(v int, answer string) *hitch.Agent {
		m := scripted.New("typed", scripted.Script{Turns: []scripted.Turn{{Text: answer}}})
		return build(t, hitch.Spec{Name: "judge", Version: v, Model: m, Answer: hitch.AnswerOf[verdictAnswer]()})
	}
	v1 := typed(1, `{"label":"spam","score":0.5}`)
	rt, _ := setup(t, v1, typed(2, `{"label":"spam","score":0.9}`))
	run := runToRest(t, rt, v1, "judge this")
	res, err := rt.Replay(context.Background(), hitch.ReplayOptions{Runs: []string{run.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if r := res[0]; r.Verdict != hitch.ReplayAnswerChanged || r.Version != 2 || !slices.Equal(r.Fields, []string{"score"}) {
		t.Errorf("typed answer: %+v", r)
	}
}
