package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/testclock"
	"github.com/hitch-dev/hitch/internal/testproc"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/tool"
)

func testAgent(m model.Model) *Agent {
	a := &Agent{Name: "a", Version: 1, Model: m, Policy: policy.AllowAll(), Limits: Limits{
		ModelAttempts: 8, RetryDelay: time.Millisecond, MaxRetryAfter: time.Second, ModelTimeout: time.Minute,
		PolicyTimeout: time.Second, ToolTimeout: time.Second, ToolConcurrency: 4, MaxToolResult: 1 << 20, CommandWait: time.Second,
	}}
	if err := a.Prepare(); err != nil {
		panic(err)
	}
	return a
}

// approvalAgent is testAgent(m) with the one tool tl, every call of which
// waits for an "ops" approval that expires in an hour.
func approvalAgent(m model.Model, tl tool.Tool) *Agent {
	a := testAgent(m)
	a.Policy = policy.Rules{{Tools: []string{"*"}, Verdict: policy.RequireApproval, Requirement: "ops"}}
	a.Limits.ApprovalExpiry = time.Hour
	a.Tools = []tool.Tool{tl}
	if err := a.Prepare(); err != nil {
		panic(err)
	}
	return a
}

// okTool is a tool x that answers "ok".
func okTool() tool.Tool {
	return tool.MustNew("x", "Does x.", func(context.Context, struct{}) (string, error) { return "ok", nil })
}

// parkedOnFile starts run "r" of approvalAgent(m, tl) on a store in a
// file of its own and returns once the run waits for its approval, with
// the file open on a second connection, for a test to change rows behind
// the store's back.
func parkedOnFile(t *testing.T, m model.Model, tl tool.Tool) (*sqlite.Store, *Engine, store.Run, *sql.DB) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "parked.db")
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	a := approvalAgent(m, tl)
	eng := testEngine(st, "node", a, time.Minute, 20*time.Second)
	t.Cleanup(func() { eng.Close(ctx) })
	if _, err := eng.Start(ctx, a, StartParams{ID: "r", Input: "hi"}); err != nil {
		t.Fatal(err)
	}
	run, err := eng.Await(ctx, "r")
	if err != nil || run.Status != hitchtype.StatusWaiting {
		t.Fatalf("run: %+v %v", run, err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return st, eng, run, db
}

func testEngine(st store.Store, owner string, a *Agent, ttl, renew time.Duration) *Engine {
	return New(Config{
		Store: st, Owner: owner,
		Agents:   func(string, int) (*Agent, bool) { return a, true },
		LeaseTTL: ttl, RenewEvery: renew, CancelPoll: time.Hour, ForceSettleGrace: time.Minute,
		AwaitPoll: 5 * time.Millisecond, MaxRunners: 8,
	})
}

// gated holds every model call until gate is closed (or its context ends).
type gated struct {
	model.Model
	entered chan<- struct{}
	gate    <-chan struct{}
}

func (g gated) Generate(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	g.entered <- struct{}{}
	select {
	case <-g.gate:
	case <-ctx.Done():
	}
	return g.Model.Generate(ctx, req)
}

// openClock opens a store on a fake clock.
func openClock(t *testing.T) (*sqlite.Store, *testclock.Clock) {
	t.Helper()
	clock := testclock.New(time.Now().UTC())
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "engine.db"), sqlite.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, clock
}

// TestStaleRunnerIsFenced puts two runners on one run: the first loses its
// lease while its model call is in flight, the second claims the run and
// finishes it, and the first's append is refused, so it stops without
// writing anything.
func TestStaleRunnerIsFenced(t *testing.T) {
	ctx := context.Background()
	st, clock := openClock(t)
	entered, gate := make(chan struct{}, 1), make(chan struct{})
	slow := gated{Model: scripted.New("slow", scripted.Script{Turns: []scripted.Turn{{Text: "from A"}}}), entered: entered, gate: gate}
	fast := scripted.New("fast", scripted.Script{Turns: []scripted.Turn{{Text: "from B"}}})
	// A never renews, as if its process had paused.
	engA := testEngine(st, "node-a", testAgent(slow), time.Minute, time.Hour)
	engB := testEngine(st, "node-b", testAgent(fast), time.Minute, 20*time.Second)
	var logs testproc.Buffer
	engA.cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))

	res, err := engA.Start(ctx, testAgent(slow), StartParams{ID: "r1", Input: "hi"})
	if err != nil || !res.Created {
		t.Fatalf("start: %+v %v", res, err)
	}
	engA.mu.Lock()
	ra := engA.active["r1"]
	engA.mu.Unlock()
	if ra == nil {
		t.Fatal("A is not driving the run")
	}
	<-entered
	// A's lease lapses by the store's clock; B claims the run and ends it.
	clock.Add(2 * time.Minute)
	if claimed, err := engB.Work(ctx); err != nil || claimed != 1 {
		t.Fatalf("B claimed %d runs: %v", claimed, err)
	}
	run, err := engB.Await(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != hitchtype.StatusCompleted {
		t.Fatalf("status %s", run.Status)
	}
	// A's model call returns; its append is refused.
	close(gate)
	<-ra.done
	if !errors.Is(ra.err, errFenced) {
		t.Errorf("stale runner stopped with %v, want a fencing error", ra.err)
	}
	// It says so once, at warn, with its token and the winner's.
	won, err := st.RunGet(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	want := []string{"level=WARN", "run=r1", fmt.Sprintf("token=%d", ra.token), fmt.Sprintf("winner_token=%d", won.LeaseToken)}
	if len(lines) != 1 || won.LeaseToken == ra.token {
		t.Errorf("the fenced runner logged %d lines (tokens %d and %d):\n%s", len(lines), ra.token, won.LeaseToken, logs.String())
	}
	for _, w := range want {
		if !strings.Contains(lines[0], w) {
			t.Errorf("the fencing line lacks %s: %s", w, lines[0])
		}
	}
	es, err := st.JournalRead(ctx, store.JournalReadParams{RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	ended := 0
	for _, e := range es {
		if e.Kind == KindRunEnded {
			ended++
			if !strings.Contains(string(e.Data), "from B") {
				t.Errorf("outcome %s is not B's", e.Data)
			}
		}
		if e.Kind == KindModelReply && strings.Contains(string(e.Data), "from A") {
			t.Error("the stale runner's reply was journaled")
		}
	}
	if ended != 1 {
		t.Errorf("%d run.ended entries, want 1", ended)
	}
	if err := engA.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := engB.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLeaseLostBeforeTheRunnerBeganIsLost: a lease that ran out between
// its claim and the runner's first read, while another node claimed the run
// and wrote to it, is reported as a lost lease — never as a corrupt
// journal — and the run is left to the node that holds it.
func TestLeaseLostBeforeTheRunnerBeganIsLost(t *testing.T) {
	ctx := context.Background()
	st, clock := openClock(t)
	a := testAgent(scripted.New("m", scripted.Script{Turns: []scripted.Turn{{Text: "over"}}}))
	engA := testEngine(st, "node-a", a, time.Minute, 20*time.Second)
	if _, err := engA.Start(ctx, a, StartParams{ID: "r1", Input: "hi", Detached: true}); err != nil {
		t.Fatal(err)
	}
	stale, err := st.LeaseClaim(ctx, store.LeaseClaimParams{Owner: "node-a", TTL: time.Minute, RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	clock.Add(2 * time.Minute)
	engB := testEngine(st, "node-b", a, time.Minute, 20*time.Second)
	if err := engB.Drive(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if run, err := engB.Await(ctx, "r1"); err != nil || run.Status != hitchtype.StatusCompleted {
		t.Fatalf("B: %+v %v", run, err)
	}
	if engA.slots.take(1) != 1 {
		t.Fatal("no slot")
	}
	r, err := engA.spawn(stale[0], nil, true)
	if err != nil {
		t.Fatal(err)
	}
	<-r.done
	if !errors.Is(r.err, errFenced) || errors.Is(r.err, ErrCorrupt) || failed(r.err) {
		t.Fatalf("the runner of a lost lease stopped with %v, want the lease reported lost", r.err)
	}
	for _, e := range []*Engine{engA, engB} {
		if err := e.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOwnEndIsNotFencing: a renewal that races the runner's own terminal
// append is refused (the run has ended), but nothing was lost to another
// runner, so no fencing warning is logged for it.
func TestOwnEndIsNotFencing(t *testing.T) {
	ctx := context.Background()
	st, _ := openClock(t)
	entered, gate := make(chan struct{}, 1), make(chan struct{})
	slow := gated{Model: scripted.New("one", scripted.Script{Turns: []scripted.Turn{{Text: "done"}}}), entered: entered, gate: gate}
	eng := testEngine(st, "node-a", testAgent(slow), time.Minute, time.Hour)
	var logs testproc.Buffer
	eng.cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	if _, err := eng.Start(ctx, testAgent(slow), StartParams{ID: "r2", Input: "hi"}); err != nil {
		t.Fatal(err)
	}
	<-entered
	eng.mu.Lock()
	r := eng.active["r2"]
	eng.mu.Unlock()
	if r == nil {
		t.Fatal("the engine is not driving the run")
	}
	close(gate)
	<-r.done
	if run, err := st.RunGet(ctx, "r2"); err != nil || run.Status != hitchtype.StatusCompleted {
		t.Fatalf("run: %+v %v", run, err)
	}
	// The keeper's renewal of the same lease, answered after the end.
	r.fenced("renew", fmt.Errorf("%w: lease %d of r2 is no longer held", store.ErrFenced, r.token))
	if strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("a runner that ended its own run logged a fencing warning:\n%s", logs.String())
	}
}

// TestOwnParkIsNotFencing: a renewal that races the runner's own park (the
// run waits for an approval and its lease was released by this runner) is
// refused, but no other runner took the run, so no warning is logged. At
// scale the keeper renews hundreds of runners a batch, and many park
// between the batch being listed and the store answering.
func TestOwnParkIsNotFencing(t *testing.T) {
	ctx := context.Background()
	st, _ := openClock(t)
	m := scripted.New("m", scripted.Script{Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: "x"}}}, {Text: "done"}}})
	a := approvalAgent(m, okTool())
	eng := testEngine(st, "node-a", a, time.Minute, time.Hour)
	defer eng.Close(ctx)
	var logs testproc.Buffer
	eng.cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	if _, err := eng.Start(ctx, a, StartParams{ID: "r3", Input: "hi"}); err != nil {
		t.Fatal(err)
	}
	eng.mu.Lock()
	r := eng.active["r3"]
	eng.mu.Unlock()
	if r == nil {
		t.Fatal("the engine is not driving the run")
	}
	<-r.done
	if run, err := st.RunGet(ctx, "r3"); err != nil || run.Status != hitchtype.StatusWaiting {
		t.Fatalf("run: %+v %v", run, err)
	}
	// The keeper's renewal of the same lease, answered after the park.
	r.fenced("renew", fmt.Errorf("%w: lease %d of r3 is no longer held", store.ErrFenced, r.token))
	if strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("a runner that parked its own run logged a fencing warning:\n%s", logs.String())
	}
}

// budgetGate holds the first family-budget read until its context ends,
// so a test can take the runner's lease away in the middle of it.
type budgetGate struct {
	store.Store
	entered chan struct{}
	once    sync.Once
}

func (b *budgetGate) BudgetGet(ctx context.Context, rootID string) (store.Budget, store.Budget, bool, error) {
	first := false
	b.once.Do(func() { first = true })
	if first {
		close(b.entered)
		<-ctx.Done()
	}
	return b.Store.BudgetGet(ctx, rootID)
}

// TestLostLeaseIsNotAFailure: a runner whose lease is taken away while it
// is reading from the store returns that read's "context canceled". The
// runner was ended for the lost lease, which is what it must report: a
// caller awaiting the run goes on waiting for whoever holds it now rather
// than getting a cancellation it did not ask for. It failed before: the
// runner's error was the read's, and Await returned it.
func TestLostLeaseIsNotAFailure(t *testing.T) {
	ctx := context.Background()
	st, _ := openClock(t)
	gate := &budgetGate{Store: st, entered: make(chan struct{})}
	a := testAgent(scripted.New("one", scripted.Script{Turns: []scripted.Turn{{Text: "done"}}}))
	eng := testEngine(gate, "node-a", a, time.Minute, time.Hour)
	defer eng.Close(ctx)
	// Started detached and then driven, the run is claimed, so its runner
	// reads the family's budget (a run Start drives at once has it).
	if _, err := eng.Start(ctx, a, StartParams{ID: "r5", Input: "hi", Detached: true}); err != nil {
		t.Fatal(err)
	}
	if err := eng.Drive(ctx, "r5"); err != nil {
		t.Fatal(err)
	}
	<-gate.entered
	eng.mu.Lock()
	r := eng.active["r5"]
	eng.mu.Unlock()
	if r == nil {
		t.Fatal("the engine is not driving the run")
	}
	r.fenced("renew", fmt.Errorf("%w: lease %d of r5 is no longer held", store.ErrFenced, r.token))
	<-r.done
	if failed(r.err) || !errors.Is(r.err, errFenced) {
		t.Fatalf("runner error %v: want the lost lease (errFenced), not a failure", r.err)
	}
}
