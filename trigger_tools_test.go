package hitch_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/internal/hitchtest"
	"github.com/hitch-dev/hitch/internal/testclock"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/sessions"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/tool/builtin"
	"github.com/hitch-dev/hitch/triggers"
)

// schedulingSession opens a session whose agent plays calls (one turn of
// tool calls, then a text) under pol, sends it one message and waits for
// the session to rest.
func schedulingSession(t *testing.T, calls []scripted.Call, pol policy.Policy, tc triggers.Config) *trigFixture {
	t.Helper()
	c := testclock.New(t0)
	st := hitchtest.OpenStore(t, filepath.Join(t.TempDir(), "hitch.db"), sqlite.WithClock(c.Now))
	tools, err := builtin.ScheduleTools()
	if err != nil {
		t.Fatal(err)
	}
	a, err := hitch.Build(hitch.Spec{Name: "waker", Tools: tools, Policy: pol, Model: scripted.New("waker", scripted.Script{
		Turns: []scripted.Turn{{Calls: calls}, {Text: "noted"}}})})
	if err != nil {
		t.Fatal(err)
	}
	rt := hitchtest.Open(t, hitch.Config{Store: st, Agents: []*hitch.Agent{a}, Triggers: tc})
	f := &trigFixture{t: t, ctx: t.Context(), clock: c, st: st, rt: rt, agent: a}
	if _, _, err := rt.Sessions().Open(f.ctx, a, sessions.Options{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Sessions().Send(f.ctx, "s", "remind me", sessions.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Sessions().Await(f.ctx, "s"); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *trigFixture) sessionTriggers() []triggers.Trigger {
	f.t.Helper()
	trs, err := f.rt.Triggers().List(f.ctx, triggers.ListOptions{SessionID: "s"})
	if err != nil {
		f.t.Fatal(err)
	}
	return trs
}

// The model asks to be woken in 10 minutes: the wake is a binding of its
// session, and when the store clock gets there the session receives the
// message and works it.
func TestScheduleWakeWakesTheSession(t *testing.T) {
	t.Parallel()
	f := schedulingSession(t, []scripted.Call{{Name: "schedule_wake", Args: `{"in":"10m","text":"check the deploy"}`}},
		policy.AllowAll(), triggers.Config{})
	trs := f.sessionTriggers()
	if len(trs) != 1 || trs[0].Spec.Session != "s" || !trs[0].NextFire.Equal(t0.Add(10*time.Minute)) || trs[0].SessionID != "s" {
		t.Fatalf("bindings of the session: %+v", trs)
	}
	f.clock.Set(t0.Add(10*time.Minute - time.Second))
	if n := f.drain(); n != 0 {
		t.Fatalf("dispatched %d before the wake", n)
	}
	f.clock.Set(t0.Add(10 * time.Minute))
	if n := f.drain(); n != 1 {
		t.Fatalf("dispatched %d at the wake, want 1", n)
	}
	st, err := f.rt.Sessions().Await(f.ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Submissions) != 2 || st.Submissions[1].Text != "check the deploy" || st.Submissions[1].Outcome != "completed" {
		t.Fatalf("submissions: %+v", st.Submissions)
	}
	if tr := f.trigger(trs[0].Spec.ID); tr.State != "done" || tr.FireCount != 1 {
		t.Fatalf("after the wake: %+v", tr)
	}
}

// The tools are decided by the policy like any other: denied, nothing is
// scheduled.
func TestScheduleToolsAreDecidedByThePolicy(t *testing.T) {
	t.Parallel()
	pol := policy.Func(func(_ context.Context, a policy.Action) (policy.Decision, error) {
		if strings.HasPrefix(a.Tool, "schedule") {
			return policy.Decision{Verdict: policy.Deny, Reason: "no timers here"}, nil
		}
		return policy.Decision{Verdict: policy.Allow}, nil
	})
	f := schedulingSession(t, []scripted.Call{{Name: "schedule_wake", Args: `{"in":"10m"}`},
		{Name: "schedule", Args: `{"cron":"@daily","text":"standup"}`}}, pol, triggers.Config{})
	if trs := f.sessionTriggers(); len(trs) != 0 {
		t.Fatalf("denied calls scheduled %+v", trs)
	}
}

// A session's bindings are bounded in number, and a recurring one in how
// often it fires.
func TestScheduleToolsAreBounded(t *testing.T) {
	t.Parallel()
	f := schedulingSession(t, []scripted.Call{
		{Name: "schedule", Args: `{"cron":"*/2 * * * *","text":"too often"}`},
		{Name: "schedule", Args: `{"cron":"0 9 * * mon-fri","zone":"Europe/Berlin","text":"standup"}`},
		{Name: "schedule_wake", Args: `{"in":"1h"}`},
		{Name: "schedule_wake", Args: `{"at":"2020-01-01T00:00:00Z"}`},
	}, policy.AllowAll(), triggers.Config{MaxPerSession: 1})
	// The calls of one turn run at once: the standup or the wake, whichever
	// came first, takes the one place.
	trs := f.sessionTriggers()
	if len(trs) != 1 || (trs[0].Spec.Cron != "0 9 * * mon-fri" && !trs[0].NextFire.Equal(t0.Add(time.Hour))) {
		t.Fatalf("bindings: %+v", trs)
	}
	// The model was told why each other call was refused.
	st, err := f.rt.Sessions().Status(f.ctx, "s")
	if err != nil || len(st.Submissions) != 1 {
		t.Fatalf("status: %v %+v", err, st)
	}
	entries, err := f.rt.Journal(f.ctx, st.Submissions[0].RunID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, e := range entries {
		all.Write(e.Data)
	}
	for _, want := range []string{"at least 5m0s apart", "its limit", "in the past"} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("the journal does not tell the model %q", want)
		}
	}
}
