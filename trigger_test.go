package hitch_test

import (
	"context"
	"encoding/json"
	"errors"
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
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/tool/builtin"
	"github.com/hitch-dev/hitch/triggers"
)

func tickAgent() (*hitch.Agent, error) {
	return hitch.Build(hitch.Spec{Name: "tick", Model: scripted.New("tick", scripted.Script{Turns: []scripted.Turn{{Text: "ok"}}}),
		Policy: policy.AllowAll()})
}

func triggerAgent(t testing.TB) *hitch.Agent {
	t.Helper()
	a, err := tickAgent()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

type trigFixture struct {
	t     *testing.T
	ctx   context.Context
	clock *testclock.Clock
	st    *sqlite.Store
	rt    *hitch.Runtime
	agent *hitch.Agent
}

func newTrigFixture(t *testing.T, start time.Time) *trigFixture {
	t.Helper()
	c := testclock.New(start)
	st := hitchtest.OpenStore(t, filepath.Join(t.TempDir(), "hitch.db"), sqlite.WithClock(c.Now))
	a := triggerAgent(t)
	rt := hitchtest.Open(t, hitch.Config{Store: st, Agents: []*hitch.Agent{a}, Triggers: triggers.Config{ClaimTTL: time.Minute}})
	return &trigFixture{t: t, ctx: t.Context(), clock: c, st: st, rt: rt, agent: a}
}

// drain dispatches until nothing is due.
func (f *trigFixture) drain() int {
	f.t.Helper()
	total := 0
	for {
		n, err := f.rt.DispatchTriggers(f.ctx)
		if err != nil {
			f.t.Fatal(err)
		}
		if n == 0 {
			return total
		}
		total += n
	}
}

func (f *trigFixture) trigger(id string) triggers.Trigger {
	f.t.Helper()
	tr, err := f.rt.Triggers().Get(f.ctx, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return tr
}

func (f *trigFixture) runExists(id string) bool {
	f.t.Helper()
	_, err := f.st.RunGet(f.ctx, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		f.t.Fatal(err)
	}
	return err == nil
}

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// Walking the clock minute by minute, each occurrence starts its run once,
// not a moment before it comes.
func TestTriggerFiresEachOccurrenceOnceNeverEarly(t *testing.T) {
	t.Parallel()
	f := newTrigFixture(t, t0.Add(30*time.Second))
	if _, created, err := f.rt.Triggers().Create(f.ctx, triggers.Spec{ID: "five", Cron: "*/5 * * * *", Agent: "tick", Input: "go"},
		triggers.Options{}); err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	for m := 1; m <= 60; m++ {
		occ := t0.Add(time.Duration(m) * time.Minute)
		// A microsecond before, nothing fires.
		f.clock.Set(occ.Add(-time.Microsecond))
		f.drain()
		if f.runExists(triggers.OccurrenceID("five", occ)) {
			t.Fatalf("the occurrence of %v fired early", occ)
		}
		f.clock.Set(occ)
		f.drain()
		f.drain()
		if got, want := f.runExists(triggers.OccurrenceID("five", occ)), m%5 == 0; got != want {
			t.Fatalf("at %v: run exists = %v, want %v", occ, got, want)
		}
		if m%5 == 0 {
			r, _ := f.st.RunGet(f.ctx, triggers.OccurrenceID("five", occ))
			if r.CreatedAt.Before(occ) {
				t.Fatalf("run created at %v, before its occurrence %v", r.CreatedAt, occ)
			}
		}
	}
	tr := f.trigger("five")
	if tr.FireCount != 12 || tr.MissedCount != 0 || !tr.LastFire.Equal(t0.Add(time.Hour)) ||
		!tr.NextFire.Equal(t0.Add(65*time.Minute)) || tr.State != "active" {
		t.Fatalf("after an hour: %+v", tr)
	}
}

// Occurrences missed while nothing ran: once folds them into one fire,
// skip fires none; both go on with the schedule.
func TestTriggerMissedPolicies(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		policy       string
		runs, missed int64
	}{
		{triggers.MissedOnce, 1, 11},
		{triggers.MissedSkip, 0, 12},
	} {
		t.Run(c.policy, func(t *testing.T) {
			t.Parallel()
			f := newTrigFixture(t, t0)
			_, _, err := f.rt.Triggers().Create(f.ctx, triggers.Spec{ID: "m", Cron: "*/5 * * * *", Agent: "tick", Missed: c.policy},
				triggers.Options{})
			if err != nil {
				t.Fatal(err)
			}
			// Within the grace, a late occurrence is on time.
			f.clock.Set(t0.Add(time.Minute))
			f.drain()
			if !f.runExists(triggers.OccurrenceID("m", t0)) {
				t.Fatal("an occurrence 1m late (within the grace) did not fire")
			}
			f.clock.Set(t0.Add(62 * time.Minute))
			f.drain()
			tr := f.trigger("m")
			if tr.FireCount != 1+c.runs || tr.MissedCount != c.missed || !tr.NextFire.Equal(t0.Add(65*time.Minute)) {
				t.Fatalf("after an hour missed: %+v", tr)
			}
			if got := f.runExists(triggers.OccurrenceID("m", t0.Add(5*time.Minute))); got != (c.runs == 1) {
				t.Fatalf("the first missed occurrence fired: %v", got)
			}
		})
	}
}

func TestTriggerLifecycle(t *testing.T) {
	t.Parallel()
	f := newTrigFixture(t, t0)
	specs := []triggers.Spec{
		{ID: "max", Cron: "* * * * *", Agent: "tick", MaxFires: 3},
		{ID: "exp", Cron: "* * * * *", Agent: "tick", ExpiresAt: t0.Add(2*time.Minute + 30*time.Second)},
		{ID: "at", At: t0.Add(90 * time.Second), Agent: "tick"},
		{ID: "paused", Cron: "* * * * *", Agent: "tick"},
	}
	for _, s := range specs {
		if _, _, err := f.rt.Triggers().Create(f.ctx, s, triggers.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.rt.Triggers().Pause(f.ctx, "paused"); err != nil {
		t.Fatal(err)
	}
	for m := 0; m <= 10; m++ {
		f.clock.Set(t0.Add(time.Duration(m) * time.Minute))
		f.drain()
	}
	for _, c := range []struct {
		id    string
		fires int64
		state string
	}{{"max", 3, "done"}, {"exp", 3, "done"}, {"at", 1, "done"}, {"paused", 0, "paused"}} {
		if tr := f.trigger(c.id); tr.FireCount != c.fires || tr.State != c.state {
			t.Errorf("%s: %d fires, %s; want %d, %s", c.id, tr.FireCount, tr.State, c.fires, c.state)
		}
	}
	if !f.runExists(triggers.OccurrenceID("at", t0.Add(90*time.Second))) {
		t.Error("the one-shot did not start its run")
	}
	// Resumed, the paused binding's missed minutes fire once.
	if _, err := f.rt.Triggers().Resume(f.ctx, "paused"); err != nil {
		t.Fatal(err)
	}
	f.drain()
	if tr := f.trigger("paused"); tr.FireCount != 1 || tr.MissedCount != 10 || tr.State != "active" {
		t.Fatalf("resumed: %+v", tr)
	}
	if removed, err := f.rt.Triggers().Remove(f.ctx, "paused"); err != nil || !removed {
		t.Fatalf("remove: %v %v", removed, err)
	}
	if _, err := f.rt.Triggers().Get(f.ctx, "paused"); !errors.Is(err, triggers.ErrNotFound) {
		t.Fatalf("get a removed binding: %v", err)
	}
}

// A node that died after it sent an occurrence's message but before it
// retired the occurrence: once its claim runs out, another dispatches the
// occurrence again, and the session still has the message once.
func TestTriggerRedispatchAfterCrashIsNoOp(t *testing.T) {
	t.Parallel()
	f := newTrigFixture(t, t0)
	if _, _, err := f.rt.Sessions().Open(f.ctx, f.agent, sessions.Options{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.rt.Triggers().Create(f.ctx, triggers.Spec{ID: "ping", Cron: "@hourly", Session: "s", Text: "ping"},
		triggers.Options{}); err != nil {
		t.Fatal(err)
	}
	f.clock.Set(t0.Add(time.Second))
	dead, _, err := f.st.TriggerClaim(f.ctx, store.TriggerClaimParams{Owner: "dead", TTL: time.Minute, Limit: 1})
	if err != nil || len(dead) != 1 {
		t.Fatalf("the dead node's claim: %v %v", dead, err)
	}
	first, err := f.rt.Sessions().Send(f.ctx, "s", "ping", sessions.SendOptions{IdempotencyKey: triggers.OccurrenceID("ping", t0)})
	if err != nil {
		t.Fatal(err)
	}
	if n := f.drain(); n != 0 {
		t.Fatalf("claimed %d while the dead node's claim was live", n)
	}
	f.clock.Set(t0.Add(2 * time.Minute))
	if n := f.drain(); n != 1 {
		t.Fatalf("claimed %d after the dead node's claim ran out, want 1", n)
	}
	msgs, err := f.rt.Sessions().Journal(f.ctx, "s", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	admitted := 0
	for _, m := range msgs {
		if m.Kind == "message.admitted" {
			admitted++
		}
	}
	if admitted != 1 {
		t.Fatalf("the session admitted %d messages, want 1 (first was %s)", admitted, first.MessageID)
	}
	if tr := f.trigger("ping"); tr.FireCount != 1 || !tr.NextFire.Equal(t0.Add(time.Hour)) {
		t.Fatalf("after the re-dispatch: %+v", tr)
	}
}

// A dispatch that fails is recorded and tried again later, not lost.
func TestTriggerFailedDispatchRetries(t *testing.T) {
	t.Parallel()
	f := newTrigFixture(t, t0)
	if _, _, err := f.rt.Triggers().Create(f.ctx, triggers.Spec{ID: "nosession", Cron: "@hourly", Session: "missing", Text: "x"},
		triggers.Options{}); err != nil {
		t.Fatal(err)
	}
	f.drain()
	tr := f.trigger("nosession")
	if tr.Failures != 1 || !strings.Contains(tr.LastError, "not found") || tr.FireCount != 0 || !tr.NextFire.Equal(t0) {
		t.Fatalf("after a failed dispatch: %+v", tr)
	}
	if n := f.drain(); n != 0 {
		t.Fatalf("retried before its time: %d", n)
	}
	if _, _, err := f.rt.Sessions().Open(f.ctx, f.agent, sessions.Options{ID: "missing"}); err != nil {
		t.Fatal(err)
	}
	f.clock.Set(t0.Add(30 * time.Second)) // within the grace: still on time
	f.drain()
	if tr := f.trigger("nosession"); tr.Failures != 0 || tr.FireCount != 1 || tr.LastError != "" {
		t.Fatalf("after the retry: %+v", tr)
	}
}

// Daylight saving through the dispatcher: a daily 02:30 in New York fires
// at the spring-forward change and once on the fall-back night.
func TestTriggerDaylightSaving(t *testing.T) {
	t.Parallel()
	start := time.Date(2027, 3, 13, 12, 0, 0, 0, time.UTC)
	f := newTrigFixture(t, start)
	if _, _, err := f.rt.Triggers().Create(f.ctx, triggers.Spec{ID: "ny", Cron: "30 2 * * *", Zone: "America/New_York", Agent: "tick"},
		triggers.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2027-03-14T07:00:00Z", "2027-03-15T06:30:00Z"} {
		at, _ := time.Parse(time.RFC3339, want)
		if tr := f.trigger("ny"); !tr.NextFire.Equal(at) {
			t.Fatalf("next fire %v, want %v", tr.NextFire, at)
		}
		f.clock.Set(at)
		f.drain()
		if !f.runExists(triggers.OccurrenceID("ny", at)) {
			t.Fatalf("nothing fired at %v", at)
		}
	}
}

func TestTriggerSpecErrorsNameFields(t *testing.T) {
	t.Parallel()
	err := triggers.Spec{ID: "bad id!", Cron: "61 * * * *", Agent: "a", Session: "s", Missed: "sometimes", Grace: time.Millisecond, MaxFires: -1}.Validate()
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"id: ", "cron: ", "session: ", "missed: ", "grace: ", "max_fires: "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not name %s", err, want)
		}
	}
	if err := (triggers.Spec{ID: "x", At: t0, Zone: "Europe/Berlin", Session: "s", Text: "t"}).Validate(); err == nil || !strings.Contains(err.Error(), "zone") {
		t.Errorf("a zone on a one-shot: %v", err)
	}
}

func TestTriggerSpecJSON(t *testing.T) {
	t.Parallel()
	in := triggers.Spec{ID: "x", Cron: "@daily", Zone: "Europe/Berlin", Session: "s", Text: "hi", Grace: 90 * time.Second,
		MaxFires: 3, ExpiresAt: t0}
	b, err := json.Marshal(in)
	if err != nil || !strings.Contains(string(b), `"grace":"1m30s"`) {
		t.Fatalf("marshal: %s %v", b, err)
	}
	var out triggers.Spec
	if err := json.Unmarshal(b, &out); err != nil || out != in {
		t.Fatalf("round trip: %+v %v", out, err)
	}
	if err := json.Unmarshal([]byte(`{"grace":"soon"}`), &out); err == nil || !strings.Contains(err.Error(), "grace") {
		t.Fatalf("a bad grace: %v", err)
	}
}

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

type pass struct {
	n   int
	err error
}

// The dispatcher passes at once when this runtime creates a binding,
// dispatches it, survives store errors (reporting them), and stops with
// its context.
func TestRunTriggersService(t *testing.T) {
	t.Parallel()
	c := testclock.New(t0)
	st := hitchtest.OpenStore(t, filepath.Join(t.TempDir(), "hitch.db"), sqlite.WithClock(c.Now))
	events := make(chan error, 64)
	rt := hitchtest.Open(t, hitch.Config{Store: st, Agents: []*hitch.Agent{triggerAgent(t)},
		Triggers: triggers.Config{Poll: time.Minute}, // only a wake moves it on at once
		OnEvent: func(ev hitch.Event) {
			if ev.Err != nil {
				select {
				case events <- ev.Err:
				default:
				}
			}
		}})
	passes := hitch.TriggerPasses(rt)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- rt.RunTriggers(ctx) }()
	next := func() pass {
		t.Helper()
		select {
		case p := <-passes:
			return pass{p.N, p.Err}
		case <-time.After(10 * time.Second):
			t.Fatal("no pass within 10s")
		}
		return pass{}
	}
	if p := next(); p.n != 0 || p.err != nil {
		t.Fatalf("first pass: %+v", p)
	}
	if _, _, err := rt.Triggers().Create(t.Context(), triggers.Spec{ID: "now", At: t0, Agent: "tick"}, triggers.Options{}); err != nil {
		t.Fatal(err)
	}
	if p := next(); p.n != 1 || p.err != nil {
		t.Fatalf("the pass after a create: %+v", p)
	}
	if _, err := st.RunGet(t.Context(), triggers.OccurrenceID("now", t0)); err != nil {
		t.Fatalf("the binding's run: %v", err)
	}
	// A wake from another binding's change passes at once too.
	if _, err := rt.Triggers().Pause(t.Context(), "now"); err != nil {
		t.Fatal(err)
	}
	if p := next(); p.n != 0 || p.err != nil {
		t.Fatalf("the pass after a pause: %+v", p)
	}
	// A store that fails does not stop the dispatcher; it says so. (The
	// wake is sent before the store is closed, so the pass meets it closed
	// or finds it so after its wait.)
	hitch.PokeTriggers(rt)
	st.Close()
	p := next()
	for ; p.err == nil; p = next() {
		hitch.PokeTriggers(rt)
	}
	if !errors.Is(p.err, sqlite.ErrClosed) {
		t.Fatalf("a pass on a closed store: %v", p.err)
	}
	select {
	case err := <-events:
		if !strings.Contains(err.Error(), "triggers:") {
			t.Fatalf("event: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the store error was not reported")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("RunTriggers returned %v", err)
	}
}

// TestScopeTriggers: a Scope's triggers client checks the principal's
// role, and serves principals of every tenant only, since a binding is not
// spoken in a tenant's ids.
func TestScopeTriggers(t *testing.T) {
	t.Parallel()
	f := newTrigFixture(t, t0.Add(30*time.Second))
	spec := triggers.Spec{ID: "five", Cron: "*/5 * * * *", Agent: "tick", Input: "go"}
	viewer := f.rt.As(hitch.Principal{Name: "v", Tenant: hitch.AllTenants, Role: hitch.RoleViewer}).Triggers()
	if _, _, err := viewer.Create(f.ctx, spec, triggers.Options{}); !errors.Is(err, hitch.ErrForbidden) {
		t.Fatalf("a viewer's create: %v, want ErrForbidden", err)
	}
	admin := f.rt.As(hitch.Principal{Name: "a", Tenant: hitch.AllTenants, Role: hitch.RoleAdmin}).Triggers()
	if _, created, err := admin.Create(f.ctx, spec, triggers.Options{}); err != nil || !created {
		t.Fatalf("an admin's create: %v %v", created, err)
	}
	if tr, err := viewer.Get(f.ctx, "five"); err != nil || tr.Spec.ID != "five" {
		t.Fatalf("a viewer's get: %+v %v", tr, err)
	}
	if list, err := viewer.List(f.ctx, triggers.ListOptions{}); err != nil || len(list) != 1 {
		t.Fatalf("a viewer's list: %+v %v", list, err)
	}
	if _, err := viewer.Pause(f.ctx, "five"); !errors.Is(err, hitch.ErrForbidden) {
		t.Fatalf("a viewer's pause: %v, want ErrForbidden", err)
	}
	tenant := f.rt.As(hitch.Principal{Name: "t", Tenant: "acme", Role: hitch.RoleAdmin}).Triggers()
	if _, err := tenant.Get(f.ctx, "five"); !errors.Is(err, hitch.ErrForbidden) {
		t.Fatalf("a tenant's get: %v, want ErrForbidden", err)
	}
	if removed, err := tenant.Remove(f.ctx, "five"); !errors.Is(err, hitch.ErrForbidden) || removed {
		t.Fatalf("a tenant's remove: %v %v, want ErrForbidden", removed, err)
	}
	if tr, err := admin.Pause(f.ctx, "five"); err != nil || tr.State != "paused" {
		t.Fatalf("an admin's pause: %+v %v", tr, err)
	}
	if removed, err := admin.Remove(f.ctx, "five"); err != nil || !removed {
		t.Fatalf("an admin's remove: %v %v", removed, err)
	}
}
