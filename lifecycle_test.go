package hitch_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/hitchtest"
	"github.com/hitch-dev/hitch/internal/testclock"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/sandbox"
	"github.com/hitch-dev/hitch/sandbox/local"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/tool"
)

// setupClock opens a store on a fake clock and a runtime on it.
func setupClock(t *testing.T, clock *testclock.Clock, agents ...*hitch.Agent) (*hitch.Runtime, store.Store) {
	t.Helper()
	st := hitchtest.OpenStore(t, filepath.Join(t.TempDir(), "hitch.db"), sqlite.WithClock(clock.Now))
	return openOn(t, st, agents...), st
}

// openOn opens another runtime on st, closed when the test ends (before
// the store).
func openOn(t *testing.T, st store.Store, agents ...*hitch.Agent) *hitch.Runtime {
	t.Helper()
	return hitchtest.Open(t, hitch.Config{Store: st, Agents: agents, CancelPoll: 20 * time.Millisecond})
}

// leaseHeld reports whether a run's lease is live by the store's clock.
func leaseHeld(t *testing.T, st store.Store, id string) bool {
	t.Helper()
	ctx := context.Background()
	run, err := st.RunGet(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	now, err := st.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return run.LeaseOwner != "" && run.LeaseExpires.After(now)
}

// brittleAgent has a workspace that can be broken, so a runner fails
// before its first step. Its first call needs an approval (approve) or has
// an outcome nobody knows (unsure).
func brittleAgent(t *testing.T, name string, broken *atomic.Bool, approvers approval.Approvers) *hitch.Agent {
	t.Helper()
	ws := t.TempDir()
	unsure := tool.MustNew("unsure", "Acts; nobody knows whether it did.", func(context.Context, struct{}) (string, error) {
		return "", tool.Uncertain(errors.New("the line went dead"))
	})
	pay := tool.MustNew("pay", "Pays.", func(context.Context, struct{}) (string, error) { return "paid", nil })
	factory := func() (sandbox.Sandbox, []tool.Tool, error) {
		if broken.Load() {
			return nil, nil, errors.New("the workspace disk is gone")
		}
		sb, err := local.New(local.Config{Root: ws})
		return sb, []tool.Tool{unsure, pay}, err
	}
	call := "unsure"
	if name == "approve" {
		call = "pay"
	}
	m := scripted.New(name, scripted.Script{Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: call}}}, {Text: "over"}}})
	pol := policy.Rules{{Tools: []string{"pay"}, Verdict: policy.RequireApproval, Requirement: "payments"}, {Tools: []string{"*"}, Verdict: policy.Allow}}
	return build(t, hitch.Spec{Name: name, Model: m, Tools: []tool.Tool{unsure, pay}, Workspace: factory, Policy: pol, Approvers: approvers})
}

// TestCommandsReportARunnerThatFails: a command whose runner fails before
// it could apply the command (here its workspace cannot be opened) answers
// at once with that failure, and the run's lease is given back.
func TestCommandsReportARunnerThatFails(t *testing.T) {
	t.Parallel()
	var broken atomic.Bool
	approvers := members(t)
	unsure, approve := brittleAgent(t, "unsure", &broken, approvers), brittleAgent(t, "approve", &broken, approvers)
	rt, st := setup(t, unsure, approve)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	u := runToRest(t, rt, unsure, "go")
	p := runToRest(t, rt, approve, "go")
	if u.Status != hitchtype.StatusWaiting || p.Status != hitchtype.StatusWaiting {
		t.Fatalf("runs did not park: %s %s", u.Status, p.Status)
	}
	broken.Store(true)
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		run  string
		do   func(ctx context.Context) error
	}{
		{"reconcile", u.ID, func(ctx context.Context) error {
			return rt.Reconcile(ctx, u.ID, hitch.Reconciliation{Call: "t1c1", Unconfirmed: true, By: "ops"})
		}},
		{"approve", p.ID, func(ctx context.Context) error {
			return rt.Approve(ctx, p.ID, "t1c1", proof(t, approvers, "alice", "a-secret", "payments"))
		}},
		{"grant root", u.ID, func(ctx context.Context) error { return rt.GrantRoot(ctx, u.ID, dir, "ops") }},
	} {
		// Bounded well below the test's deadline: a command that hangs
		// fails here with the context's error.
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		err := c.do(cctx)
		ccancel()
		if err == nil || !strings.Contains(err.Error(), "workspace disk is gone") {
			t.Errorf("%s with a failing runner: %v, want the workspace error", c.name, err)
		}
		if leaseHeld(t, st, c.run) {
			t.Errorf("%s: the failed runner kept the run's lease", c.name)
		}
	}
	// Repaired, the commands work and nothing was lost.
	broken.Store(false)
	if err := rt.Reconcile(ctx, u.ID, hitch.Reconciliation{Call: "t1c1", Unconfirmed: true, By: "ops"}); err != nil {
		t.Fatal(err)
	}
	if run, err := rt.Await(ctx, u.ID); err != nil || run.Status != hitchtype.StatusCompleted {
		t.Fatalf("after repair: %+v %v", run, err)
	}
}

// TestReconcileUnderAnUnknownVersion: a runtime that lacks the run's agent
// version refuses the command with ErrUnknownAgent instead of hanging.
func TestReconcileUnderAnUnknownVersion(t *testing.T) {
	t.Parallel()
	var broken atomic.Bool
	v1 := brittleAgent(t, "unsure", &broken, nil)
	rt, st := setup(t, v1)
	u := runToRest(t, rt, v1, "go")
	m := scripted.New("v2", scripted.Script{Turns: []scripted.Turn{{Text: "v2"}}})
	v2 := build(t, hitch.Spec{Name: "unsure", Version: 2, Model: m})
	other := openOn(t, st, v2)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := other.Reconcile(ctx, u.ID, hitch.Reconciliation{Call: "t1c1", Unconfirmed: true, By: "ops"})
	if !errors.Is(err, hitch.ErrUnknownAgent) {
		t.Fatalf("reconcile under an unknown version: %v, want ErrUnknownAgent", err)
	}
	if leaseHeld(t, st, u.ID) {
		t.Error("the failed runner kept the run's lease")
	}
}

// TestAwaitDrivesARunWhoseProcessDied: a run leased to a process that died
// is driven by whoever awaits it once the lease has expired by the store's
// clock — as `hitch run --id` does when it follows a run started before.
func TestAwaitDrivesARunWhoseProcessDied(t *testing.T) {
	t.Parallel()
	clock := testclock.New(time.Now().UTC())
	m := scripted.New("m", scripted.Script{Turns: []scripted.Turn{{Text: "over"}}})
	a := build(t, hitch.Spec{Model: m})
	rt, st := setupClock(t, clock, a)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := rt.Start(ctx, a, "go", hitch.WithID("orphan"), hitch.Detached())
	if err != nil {
		t.Fatal(err)
	}
	// A process claims it and dies.
	if _, err := st.LeaseClaim(ctx, store.LeaseClaimParams{Owner: "dead-node", TTL: time.Minute, RunID: res.Run.ID}); err != nil {
		t.Fatal(err)
	}
	clock.Add(2 * time.Minute)
	again, err := rt.Start(ctx, a, "go", hitch.WithID("orphan"))
	if err != nil || again.Created {
		t.Fatalf("start again: %+v %v", again, err)
	}
	run, err := rt.Await(ctx, "orphan")
	if err != nil || run.Status != hitchtype.StatusCompleted {
		t.Fatalf("await an orphan: %+v %v", run, err)
	}
}

// TestRetriedStartDrivesAQueuedRun: a start that died between creating the
// run and driving it leaves it queued; starting it again drives it.
func TestRetriedStartDrivesAQueuedRun(t *testing.T) {
	t.Parallel()
	m := scripted.New("m", scripted.Script{Turns: []scripted.Turn{{Text: "over"}}})
	a := build(t, hitch.Spec{Model: m})
	rt, _ := setup(t, a)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := rt.Start(ctx, a, "go", hitch.WithID("retry"), hitch.Detached()); err != nil {
		t.Fatal(err)
	}
	res, err := rt.Start(ctx, a, "go", hitch.WithID("retry"))
	if err != nil || res.Created || !res.SameInput {
		t.Fatalf("retried start: %+v %v", res, err)
	}
	if err := rt.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if run, err := rt.Get(ctx, "retry"); err != nil || run.Status != hitchtype.StatusCompleted {
		t.Fatalf("the retried start did not drive the run: %+v %v", run, err)
	}
}

// flakyStore fails its first claims of due runs, as a store that is
// briefly unreachable.
type flakyStore struct {
	store.Store
	failures atomic.Int64
}

func (s *flakyStore) LeaseClaim(ctx context.Context, p store.LeaseClaimParams) ([]store.Lease, error) {
	if p.RunID == "" && s.failures.Add(-1) >= 0 {
		return nil, errors.New("database is unreachable")
	}
	return s.Store.LeaseClaim(ctx, p)
}

// TestSweepSurvivesStoreErrors: the sweeper backs off through store errors
// and goes on driving runs; it reports the errors as events.
func TestSweepSurvivesStoreErrors(t *testing.T) {
	t.Parallel()
	m := scripted.New("m", scripted.Script{Turns: []scripted.Turn{{Text: "over"}}})
	a := build(t, hitch.Spec{Model: m})
	st := hitchtest.OpenStore(t, filepath.Join(t.TempDir(), "hitch.db"))
	flaky := &flakyStore{Store: st}
	flaky.failures.Store(3)
	reported := make(chan error, 8)
	rt, err := hitch.Open(hitch.Config{Store: flaky, Agents: []*hitch.Agent{a}, OnEvent: func(ev hitch.Event) {
		if ev.Err != nil {
			reported <- ev.Err
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	defer rt.Close(ctx)
	res, err := rt.Start(ctx, a, "go", hitch.Detached())
	if err != nil {
		t.Fatal(err)
	}
	sweepCtx, stop := context.WithCancel(ctx)
	defer stop()
	swept := make(chan error, 1)
	go func() { swept <- rt.Sweep(sweepCtx, time.Millisecond) }()
	for range 3 {
		select {
		case err := <-reported:
			if !strings.Contains(err.Error(), "unreachable") {
				t.Errorf("reported %v", err)
			}
		case err := <-swept:
			t.Fatalf("the sweeper stopped on a store error: %v", err)
		case <-ctx.Done():
			t.Fatal("the sweeper reported no error")
		}
	}
	run, err := rt.Await(ctx, res.Run.ID)
	if err != nil || run.Status != hitchtype.StatusCompleted {
		t.Fatalf("after the errors: %+v %v", run, err)
	}
	stop()
	if err := <-swept; err != nil {
		t.Fatal(err)
	}
}

// gatedModel holds its calls after the first until gate is closed.
type gatedModel struct {
	model.Model
	entered chan<- struct{}
	gate    <-chan struct{}
}

func (g gatedModel) Generate(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	if len(req.Messages) > 1 {
		g.entered <- struct{}{}
		select {
		case <-g.gate:
		case <-ctx.Done():
			return func(yield func(*model.Chunk, error) bool) { yield(nil, ctx.Err()) }
		}
	}
	return g.Model.Generate(ctx, req)
}

// TestLateApproveThenCloseLeavesTheRunMoving: a late approve is the first
// to touch an expired request, so its runner records the lapse and calls
// the model; closing the runtime then lets that call finish and gives the
// lease back, rather than leaving the run running with a dangling attempt.
func TestLateApproveThenCloseLeavesTheRunMoving(t *testing.T) {
	t.Parallel()
	clock := testclock.New(time.Now().UTC())
	entered, gate := make(chan struct{}, 4), make(chan struct{})
	var charges atomic.Int64
	approvers := members(t)
	charge := tool.MustNew("charge", "Charges a card.", func(context.Context, struct{}) (string, error) {
		charges.Add(1)
		return "charged", nil
	})
	m := gatedModel{Model: scripted.New("pay", scripted.Script{Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: "charge"}}}, {Text: "over"}}}),
		entered: entered, gate: gate}
	a := build(t, hitch.Spec{Model: m, Tools: []tool.Tool{charge}, Policy: payPolicy, Approvers: approvers, Limits: hitch.Limits{ApprovalExpiry: time.Second}})
	rt, st := hitchtest.New(t, hitch.Config{Agents: []*hitch.Agent{a}}, sqlite.WithClock(clock.Now))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	run := runToRest(t, rt, a, "pay")
	clock.Add(2 * time.Second)
	if err := rt.Approve(ctx, run.ID, "t1c1", proof(t, approvers, "alice", "a-secret", "payments")); !errors.Is(err, hitch.ErrApprovalExpired) {
		t.Fatalf("late approve: %v", err)
	}
	<-entered // the runner called the model after recording the lapse
	go func() {
		<-hitch.Closing(rt)
		close(gate)
	}()
	if err := rt.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := st.RunGet(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	es := journal(t, rt, run.ID)
	if got.Status == hitchtype.StatusRunning || leaseHeld(t, st, run.ID) || es[len(es)-1].Kind == "model.attempt" {
		t.Fatalf("after close: %s, lease %s until %s; journal %s", got.Status, got.LeaseOwner, got.LeaseExpires, kinds(es))
	}
	if charges.Load() != 0 {
		t.Error("the expired call ran")
	}
}

// TestRecoverAllDrivesMoreRunsThanSlots: a backlog larger than the runner
// slots is driven whole, in batches as slots free up.
func TestRecoverAllDrivesMoreRunsThanSlots(t *testing.T) {
	t.Parallel()
	const runs, slots = 12, 3
	var turns []scripted.Turn
	for range runs {
		turns = append(turns, scripted.Turn{Text: "over"})
	}
	a := build(t, hitch.Spec{Model: scripted.New("m", scripted.Script{Turns: turns})})
	rt, _ := hitchtest.New(t, hitch.Config{Agents: []*hitch.Agent{a}, MaxRunners: slots})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range runs {
		if _, err := rt.Start(ctx, a, "go", hitch.WithID(fmt.Sprintf("backlog-%d", i)), hitch.Detached()); err != nil {
			t.Fatal(err)
		}
	}
	n, err := rt.RecoverAll(ctx)
	if err != nil || n != runs {
		t.Fatalf("recovered %d runs (%v), want %d", n, err, runs)
	}
	if err := rt.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range runs {
		if run, err := rt.Get(ctx, fmt.Sprintf("backlog-%d", i)); err != nil || run.Status != hitchtype.StatusCompleted {
			t.Errorf("backlog-%d: %+v %v", i, run, err)
		}
	}
}

// TestOpenRefusesABadConfig: every field out of range is named at once,
// and nothing panics.
func TestOpenRefusesABadConfig(t *testing.T) {
	t.Parallel()
	st := hitchtest.OpenStore(t, filepath.Join(t.TempDir(), "hitch.db"))
	_, err := hitch.Open(hitch.Config{Store: st, MaxRunners: -1, CancelPoll: -time.Second, LeaseTTL: 48 * time.Hour,
		ForceSettleGrace: 2 * time.Hour, Agents: []*hitch.Agent{nil}})
	if err == nil {
		t.Fatal("a bad config was accepted")
	}
	for _, field := range []string{"Config.MaxRunners is -1", "Config.CancelPoll is -1s", "Config.LeaseTTL is 48h0m0s", "Config.ForceSettleGrace is 2h0m0s", "Config.Agents[0]"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("the error does not name %s:\n%v", field, err)
		}
	}
	if _, err := hitch.Open(hitch.Config{}); err == nil || !strings.Contains(err.Error(), "Config.Store") {
		t.Errorf("no store: %v", err)
	}
	c := hitch.Config{Store: st}.WithDefaults()
	if c.LeaseTTL != hitch.DefaultLeaseTTL || c.MaxRunners != hitch.DefaultMaxRunners || c.CancelPoll != hitch.DefaultCancelPoll || c.Node == "" {
		t.Errorf("defaults: %+v", c)
	}
}

// TestRunIDsAreChecked: ids have a documented character set and length;
// others are refused with a clear error, and nothing is created.
func TestRunIDsAreChecked(t *testing.T) {
	t.Parallel()
	a := build(t, hitch.Spec{Model: scripted.New("m", scripted.Script{Turns: []scripted.Turn{{Text: "over"}}})})
	rt, _ := setup(t, a)
	ctx := context.Background()
	for _, id := range []string{"job\n42", "job\x1b[31m", "a b", "é", "a/b", strings.Repeat("x", 129)} {
		_, err := rt.Start(ctx, a, "go", hitch.WithID(id), hitch.Detached())
		if !errors.Is(err, hitch.ErrBadRunID) || strings.ContainsAny(err.Error(), "\n\x1b") {
			t.Errorf("start %q: %v", id, err)
		}
		if _, err := rt.Get(ctx, id); !errors.Is(err, hitch.ErrNotFound) {
			t.Errorf("%q was created: %v", id, err)
		}
	}
	for _, id := range []string{"job-42", "tenant:a.b_c", strings.Repeat("x", 128), hitch.NewRunID()} {
		if err := hitch.CheckRunID(id); err != nil {
			t.Errorf("%q refused: %v", id, err)
		}
	}
}

// TestStartOnAFullNodeLeavesTheRunQueued: with every runner slot busy, a
// start claims nothing and returns at once, whatever its context allows:
// the run is created queued, its lease untouched. It is driven once the
// slot frees — by Await here, and by the sweeper — and completes.
func TestStartOnAFullNodeLeavesTheRunQueued(t *testing.T) {
	t.Parallel()
	for _, by := range []string{"await", "sweeper"} {
		t.Run(by, func(t *testing.T) {
			t.Parallel()
			entered, gate := make(chan struct{}, 4), make(chan struct{})
			m := gatedModel{Model: scripted.New("m", scripted.Script{Repeat: true, Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: "add", Args: `{"a":1,"b":2}`}}}, {Text: "over"}}}),
				entered: entered, gate: gate}
			a := build(t, hitch.Spec{Model: m, Tools: []tool.Tool{addTool(t, nil)}})
			rt, st := hitchtest.New(t, hitch.Config{Agents: []*hitch.Agent{a}, MaxRunners: 1})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			defer rt.Close(ctx)
			if _, err := rt.Start(ctx, a, "first", hitch.WithID("busy")); err != nil {
				t.Fatal(err)
			}
			<-entered // the only slot is taken, by a model call that holds
			res, err := rt.Start(ctx, a, "second", hitch.WithID("queued"))
			if err != nil || !res.Created || res.Run.Status != hitchtype.StatusQueued {
				t.Fatalf("start on a full node: %+v %v, want the run created queued", res, err)
			}
			raw, err := st.RunGet(ctx, "queued")
			if err != nil {
				t.Fatal(err)
			}
			if raw.Status != hitchtype.StatusQueued || raw.LeaseOwner != "" || raw.LeaseToken != 0 {
				t.Fatalf("the start touched the run it could not drive: %+v", raw)
			}
			if by == "sweeper" {
				sweepCtx, stop := context.WithCancel(ctx)
				swept := make(chan error, 1)
				go func() { swept <- rt.Sweep(sweepCtx, time.Hour) }() // only a freed slot can drive it in time
				defer func() { stop(); <-swept }()
			}
			close(gate)
			done := make(chan error, 1)
			go func() {
				if by == "await" {
					run, err := rt.Await(ctx, "queued")
					if err == nil && run.Status != hitchtype.StatusCompleted {
						err = fmt.Errorf("status %s", run.Status)
					}
					done <- err
					return
				}
				for {
					run, err := rt.Get(ctx, "queued")
					if err != nil || run.Status == hitchtype.StatusCompleted {
						done <- err
						return
					}
					select {
					case <-ctx.Done():
						done <- ctx.Err()
						return
					case <-time.After(10 * time.Millisecond):
					}
				}
			}()
			if err := <-done; err != nil {
				t.Fatalf("the queued run did not complete once the slot freed: %v", err)
			}
		})
	}
}

// The drain test stops a worker process with SIGTERM while its tool bodies
// run: the bodies finish, their results are journaled, and the leases are
// given back, so a second process resumes every run at once — with a lease
// TTL far longer than the test may take.

const (
	drainRuns     = 4
	drainLeaseTTL = 10 * time.Minute
)

// drainAgent calls one non-replayable tool whose body records itself in
// effects and then holds until release is closed (or its context ends),
// then answers.
func drainAgent(effects string, release <-chan struct{}, marker func(string)) (*hitch.Agent, error) {
	effect, err := tool.New("effect", "Acts once, slowly.", func(ctx context.Context, _ struct{}) (string, error) {
		info, _ := tool.CallFrom(ctx)
		f, err := os.OpenFile(effects, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(f, "%s %s\n", info.RunID, info.Call)
		f.Close()
		marker("IN_BODY")
		select {
		case <-release:
			return "effect ok", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	if err != nil {
		return nil, err
	}
	m := scripted.New("drain", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{{Name: "effect", Args: `{}`}}},
		{Text: "done"},
	}})
	return hitch.Build(hitch.Spec{Name: "drain", Model: m, Tools: []tool.Tool{effect}, Policy: policy.AllowAll()})
}

// drainChild is a worker: it starts the runs, sweeps until SIGTERM, then
// closes the runtime with the default drain window. Tool bodies hold until
// its stdin is closed.
func drainChild(db, effects string) int {
	sigCtx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	release := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(release)
	}()
	var mu sync.Mutex
	marker := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Println(s)
	}
	a, err := drainAgent(effects, release, marker)
	if err != nil {
		return childFail(err)
	}
	rt, err := childOpen(context.Background(), db, hitch.Config{Agents: []*hitch.Agent{a}, LeaseTTL: drainLeaseTTL})
	if err != nil {
		return childFail(err)
	}
	for i := range drainRuns {
		if _, err := rt.Start(context.Background(), a, "go", hitch.WithID(fmt.Sprintf("drain-%d", i)), hitch.Detached()); err != nil {
			return childFail(err)
		}
	}
	if err := rt.Sweep(sigCtx, 10*time.Millisecond); err != nil {
		return childFail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hitch.DefaultDrainWindow)
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- rt.Close(ctx) }()
	<-hitch.Closing(rt)
	marker("DRAINING")
	if err := <-closed; err != nil {
		return childFail(err)
	}
	return 0
}

func TestGracefulStopDrainsAndReleases(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	t.Parallel()
	dir := t.TempDir()
	db, effects := filepath.Join(dir, "drain.db"), filepath.Join(dir, "effects.log")
	stdin, release, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	cmd, lines := startChild(t, stdin, "HITCH_CRASH_MODE=drain", "HITCH_CRASH_DB="+db, "HITCH_CRASH_EFFECTS="+effects)
	waitFor := func(marker string, n int) {
		t.Helper()
		awaitLine(t, cmd, lines, marker, n, func(l string) bool { return l == marker })
	}
	waitFor("IN_BODY", drainRuns)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor("DRAINING", 1)
	// The bodies finish only now, inside the drain window.
	release.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the worker did not stop cleanly: %v", err)
	}

	// A second process resumes every run at once: waiting for the leases
	// (10 minutes) would outlast the test.
	a, err := drainAgent(effects, nil, func(string) { t.Error("a body ran again after the drain") })
	if err != nil {
		t.Fatal(err)
	}
	st := hitchtest.OpenStore(t, db)
	rt := hitchtest.Open(t, hitch.Config{Store: st, Agents: []*hitch.Agent{a}, LeaseTTL: drainLeaseTTL})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := rt.RecoverAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != drainRuns {
		for i := range drainRuns {
			id := fmt.Sprintf("drain-%d", i)
			r, _ := st.RunGet(ctx, id)
			t.Logf("%s: %s %s %s %s", id, r.Status, r.LeaseOwner, r.LeaseExpires, kinds(journal(t, rt, id)))
		}
		t.Fatalf("the second process claimed %d runs at once, want %d", n, drainRuns)
	}
	uncertain := 0
	for i := range drainRuns {
		id := fmt.Sprintf("drain-%d", i)
		run, err := rt.Await(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		es := journal(t, rt, id)
		uncertain += strings.Count(kinds(es), "call.uncertain")
		if run.Status != hitchtype.StatusCompleted || run.Outcome.Answer != "done" {
			t.Errorf("%s: %s %+v; journal %s", id, run.Status, run.Outcome, kinds(es))
		}
	}
	if uncertain != 0 {
		t.Errorf("%d uncertain calls after a graceful stop, want 0", uncertain)
	}
	b, err := os.ReadFile(effects)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(b), "\n"); got != drainRuns {
		t.Errorf("%d bodies ran, want %d:\n%s", got, drainRuns, b)
	}
}
