package hitch_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/hitchtest"
	"github.com/hitch-dev/hitch/internal/testproc"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/sessions"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/tool"
)

// The chaos test stops a process that drives many runs at random moments,
// again and again — with SIGKILL, or gracefully with SIGTERM — each new
// process recovering what the last one left, then checks the invariants
// from the journals and the effects the tool bodies recorded: no
// non-replayable body ran twice, every journal folds, every run ends exactly
// once, and a graceful stop leaves no call started without its result (so
// it causes no uncertain call).

const (
	chaosRuns   = 12
	chaosKills  = 8
	chaosReplay = 3
)

// chaosAgent records every body run as "run call attempt kind" in effects.
func chaosAgent(effects string) (*hitch.Agent, error) {
	body := func(kind string) tool.Func[struct{}, string] {
		return func(ctx context.Context, _ struct{}) (string, error) {
			info, _ := tool.CallFrom(ctx)
			f, err := os.OpenFile(effects, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(f, "%s %s %d %s\n", info.RunID, info.Call, info.Attempt, kind)
			f.Close()
			select { // long enough to be killed inside, sometimes
			case <-time.After(time.Duration(rand.IntN(40)) * time.Millisecond):
			case <-ctx.Done():
				return "", ctx.Err()
			}
			return kind + " ok", nil
		}
	}
	effect, err := tool.New("effect", "Acts once.", body("effect"))
	if err != nil {
		return nil, err
	}
	lookup, err := tool.New("lookup", "Safe to repeat.", body("lookup"), tool.WithReplay(chaosReplay))
	if err != nil {
		return nil, err
	}
	var turns []scripted.Turn
	for range 3 {
		turns = append(turns,
			scripted.Turn{Calls: []scripted.Call{{Name: "effect"}}, Delay: 20 * time.Millisecond},
			scripted.Turn{Calls: []scripted.Call{{Name: "lookup"}, {Name: "effect"}, {Name: "lookup"}}, Delay: 30 * time.Millisecond})
	}
	turns = append(turns, scripted.Turn{Text: "done", Delay: 15 * time.Millisecond})
	m := scripted.New("chaos", scripted.Script{Turns: turns})
	return hitch.Build(hitch.Spec{Name: "chaos", Model: m, Tools: []tool.Tool{effect, lookup}, Policy: policy.AllowAll(),
		Budget: &hitch.Budget{ToolCalls: 1000, ModelCalls: 1000}, Limits: hitch.Limits{ModelAttempts: 20}})
}

// chaosChild starts the runs (a repeated start is a no-op) and sweeps,
// recovering whatever earlier processes left, until it is killed, or until
// SIGTERM, when it drains and exits.
func chaosChild(db, effects string) int {
	ctx := context.Background()
	sigCtx, stop := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer stop()
	a, err := chaosAgent(effects)
	if err != nil {
		return childFail(err)
	}
	rt, err := childOpen(ctx, db, hitch.Config{Agents: []*hitch.Agent{a}, LeaseTTL: 150 * time.Millisecond})
	if err != nil {
		return childFail(err)
	}
	fmt.Println("READY")
	for i := range chaosRuns {
		if _, err := rt.Start(ctx, a, "go", hitch.WithID(fmt.Sprintf("chaos-%d", i)), hitch.Detached()); err != nil {
			return childFail(err)
		}
	}
	_ = rt.Sweep(sigCtx, 10*time.Millisecond)
	dctx, cancel := context.WithTimeout(ctx, hitch.DefaultDrainWindow)
	defer cancel()
	if err := rt.Close(dctx); err != nil {
		return childFail(err)
	}
	return 0
}

// danglingCalls counts the calls whose start was journaled after the
// positions in since (a run's journal length before a process started) and
// whose result (settled, failed or uncertain) is not: the calls that
// process left open. It returns the journals' lengths now.
func danglingCalls(t *testing.T, db string, since map[string]int64) (int, map[string]int64) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n, now := 0, map[string]int64{}
	for i := range chaosRuns {
		id := fmt.Sprintf("chaos-%d", i)
		es, err := st.JournalRead(context.Background(), store.JournalReadParams{RunID: id, Limit: 10000})
		if errors.Is(err, store.ErrNotFound) {
			continue // not started yet
		}
		if err != nil {
			t.Fatal(err)
		}
		open := map[string]bool{}
		for _, e := range es {
			var c struct{ Call string }
			if json.Unmarshal(e.Data, &c) != nil {
				continue
			}
			switch e.Kind {
			case "call.started":
				if e.Pos > since[id] {
					open[c.Call] = true
				}
			case "call.settled", "call.failed", "call.uncertain":
				delete(open, c.Call)
			}
		}
		n += len(open)
		if len(es) > 0 {
			now[id] = es[len(es)-1].Pos
		}
	}
	return n, now
}

func TestChaosKills(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills processes")
	}
	t.Parallel()
	dir := t.TempDir()
	db, effects := filepath.Join(dir, "chaos.db"), filepath.Join(dir, "effects.log")
	graceful, gracefulDangling := 0, 0
	var before map[string]int64
	for k := range chaosKills {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		testproc.DieWithParent(cmd)
		cmd.Env = append(os.Environ(), "HITCH_CRASH_MODE=chaos", "HITCH_CRASH_DB="+db, "HITCH_CRASH_EFFECTS="+effects)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		_, before = danglingCalls(t, db, nil) // what earlier stops left is not this one's
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if sc := bufio.NewScanner(out); !sc.Scan() || sc.Text() != "READY" {
			_ = cmd.Process.Kill()
			t.Fatalf("kill %d: the child did not start", k)
		}
		time.Sleep(time.Duration(10+rand.IntN(90)) * time.Millisecond) // a random moment, not a synchronisation
		if k%2 == 0 {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
			continue
		}
		graceful++
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("stop %d: the child did not drain cleanly: %v", k, err)
		}
		if n, _ := danglingCalls(t, db, before); n > 0 {
			gracefulDangling += n
			t.Errorf("stop %d: a graceful stop left %d call(s) started without a result", k, n)
		}
	}

	// Finish in this process: recover, reconcile every uncertain call as
	// unconfirmed, and let every run end.
	a, err := chaosAgent(effects)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rt, _ := setupAt(t, db, a)
	sweepCtx, stop := context.WithCancel(ctx)
	defer stop()
	go rt.Sweep(sweepCtx, 20*time.Millisecond)
	for i := range chaosRuns {
		id := fmt.Sprintf("chaos-%d", i)
		if _, err := rt.Start(ctx, a, "go", hitch.WithID(id), hitch.Detached()); err != nil {
			t.Fatal(err)
		}
		for {
			run, err := rt.Await(ctx, id)
			if err != nil {
				t.Fatalf("%s: %v", id, err)
			}
			if run.Status != hitchtype.StatusWaiting {
				break
			}
			reconciled := map[string]bool{}
			var uncertain []string
			for _, e := range journal(t, rt, id) {
				var u struct{ Call string }
				if json.Unmarshal(e.Data, &u) != nil {
					continue
				}
				switch e.Kind {
				case "call.uncertain":
					uncertain = append(uncertain, u.Call)
				case "call.reconciled":
					reconciled[u.Call] = true
				}
			}
			for _, call := range uncertain {
				if reconciled[call] {
					continue
				}
				if err := rt.Reconcile(ctx, id, hitch.Reconciliation{Call: call, Unconfirmed: true, By: "chaos"}); err != nil {
					t.Fatalf("reconcile %s %s: %v", id, call, err)
				}
			}
		}
	}

	// The invariants.
	b, err := os.ReadFile(effects)
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) == 4 {
			ran[f[0]+" "+f[1]+" "+f[3]]++
		}
	}
	for key, n := range ran {
		if strings.HasSuffix(key, " effect") && n > 1 {
			t.Errorf("non-replayable %s ran %d times", key, n)
		}
		if strings.HasSuffix(key, " lookup") && n > chaosReplay {
			t.Errorf("replayable %s ran %d times, more than its %d attempts", key, n, chaosReplay)
		}
	}
	var toolCalls int64
	var interrupted, uncertain int
	for i := range chaosRuns {
		id := fmt.Sprintf("chaos-%d", i)
		run, err := rt.Get(ctx, id)
		if err != nil || run.Status != hitchtype.StatusCompleted {
			t.Errorf("%s: %+v %v", id, run, err)
			continue
		}
		es := journal(t, rt, id)
		for j, e := range es {
			if e.Pos != int64(j+1) {
				t.Fatalf("%s: entry %d has position %d", id, j+1, e.Pos)
			}
		}
		if n := strings.Count(kinds(es), "run.ended"); n != 1 || es[len(es)-1].Kind != "run.ended" {
			t.Errorf("%s: %d terminal entries, last %s", id, n, es[len(es)-1].Kind)
		}
		// Every body started is journaled before it ran.
		started := strings.Count(kinds(es), "call.started")
		for key, n := range ran {
			if strings.HasPrefix(key, id+" ") && n > started {
				t.Errorf("%s: %s ran %d times but %d starts are journaled", id, key, n, started)
			}
		}
		toolCalls += int64(started)
		interrupted += strings.Count(kinds(es), "model.interrupted")
		uncertain += strings.Count(kinds(es), "call.uncertain")
		_, used, _, _ := rt.FamilyBudget(ctx, id)
		if used.ToolCalls < int64(started) {
			t.Errorf("%s: budget charged %d tool calls for %d starts", id, used.ToolCalls, started)
		}
	}
	t.Logf("%d runs, %d stops (%d graceful, %d calls left without a result by them), %d bodies run, %d starts journaled, %d interrupted model calls, %d uncertain calls",
		chaosRuns, chaosKills, graceful, gracefulDangling, len(strings.Split(strings.TrimSpace(string(b)), "\n")), toolCalls, interrupted, uncertain)
}

// The session chaos test is a property test: for any interleaving of sends
// (queue, steer, interrupt, with and without idempotency keys), SIGKILLs of
// the process sending and working them, and recoveries by a fresh process,
//
//  1. every provider request is a valid transcript: each tool call has
//     exactly one result, in order;
//  2. no acknowledged message is lost, none is admitted twice, each is
//     worked once (started or joined), and queued ones start in admission
//     order;
//  3. each submission ends exactly once.
//
// A seeded generator makes each schedule; a failure names its seed.

const (
	sessionChaosSchedules = 16
	sessionChaosSession   = "chaos"
	sessionChaosLease     = 150 * time.Millisecond
)

// chaosOp is one send of a schedule.
type chaosOp struct {
	I    int    `json:"i"`
	Text string `json:"text"`
	Mode string `json:"mode"`
	Key  string `json:"key,omitempty"`
}

// sessionChaosEnv is what a child is told.
type sessionChaosEnv struct {
	DB, Effects, Requests string
	Seed                  uint64
	Ops                   []chaosOp
}

func init() {
	if v := os.Getenv("HITCH_SESSION_CHAOS"); v != "" {
		os.Exit(sessionChaosChild(v))
	}
}

// sessionChaosAgent: two turns of calls to a replayable tool that appends
// to effects and takes a little while, then an answer.
func sessionChaosAgent(effects, requests string) (*hitch.Agent, error) {
	effect, err := tool.New("effect", "Records and waits a little.", func(ctx context.Context, _ struct{}) (string, error) {
		info, _ := tool.CallFrom(ctx)
		f, err := os.OpenFile(effects, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(f, "%s %s %d\n", info.RunID, info.Call, info.Attempt)
		f.Close()
		select { // long enough to be killed or interrupted inside, sometimes
		case <-time.After(time.Duration(5+rand.IntN(25)) * time.Millisecond):
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return "effect ok", nil
	}, tool.WithReplay(20))
	if err != nil {
		return nil, err
	}
	m := &hitchtest.RecordingModel{Path: requests, Next: scripted.New("session-chaos", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{{Name: "effect", Args: `{}`}, {Name: "effect", Args: `{}`}}, Delay: 10 * time.Millisecond},
		{Calls: []scripted.Call{{Name: "effect", Args: `{}`}}, Delay: 10 * time.Millisecond},
		{Text: "done", Delay: 5 * time.Millisecond},
	}})}
	return hitch.Build(hitch.Spec{Name: "session-chaos", Model: m, Tools: []tool.Tool{effect}, Policy: policy.AllowAll(),
		Budget: &hitch.Budget{ToolCalls: 1000, ModelCalls: 1000}, Limits: hitch.Limits{ModelAttempts: 20}})
}

func sessionChaosRuntime(ctx context.Context, env sessionChaosEnv) (*hitch.Runtime, *hitch.Agent, func(), error) {
	a, err := sessionChaosAgent(env.Effects, env.Requests)
	if err != nil {
		return nil, nil, nil, err
	}
	st, err := sqlite.Open(ctx, env.DB)
	if err != nil {
		return nil, nil, nil, err
	}
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{a}, LeaseTTL: sessionChaosLease, CancelPoll: 10 * time.Millisecond})
	if err != nil {
		st.Close()
		return nil, nil, nil, err
	}
	closeAll := func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rt.Close(cctx)
		_ = st.Close()
	}
	return rt, a, closeAll, nil
}

// sessionChaosChild sends its ops, printing TRY before and SENT after each,
// with random gaps, while it sweeps (recovering what earlier processes
// left), until it is killed.
func sessionChaosChild(v string) int {
	var env sessionChaosEnv
	if err := json.Unmarshal([]byte(v), &env); err != nil {
		return childFail(err)
	}
	ctx := context.Background()
	rt, a, _, err := sessionChaosRuntime(ctx, env)
	if err != nil {
		return childFail(err)
	}
	if _, _, err := rt.Sessions().Open(ctx, a, sessions.Options{ID: sessionChaosSession}); err != nil {
		return childFail(err)
	}
	go func() { _ = rt.Sweep(ctx, 10*time.Millisecond) }()
	fmt.Println("READY")
	rng := rand.New(rand.NewPCG(env.Seed, 1))
	for _, op := range env.Ops {
		fmt.Printf("TRY %d\n", op.I)
		res, err := rt.Sessions().Send(ctx, sessionChaosSession, op.Text, sessions.SendOptions{Mode: sessions.Mode(op.Mode), IdempotencyKey: op.Key})
		if err != nil {
			return childFail(err)
		}
		fmt.Printf("SENT %d %s %t\n", op.I, res.MessageID, res.Duplicate)
		time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond) // a random gap, not a synchronisation
	}
	fmt.Println("DONE")
	select {}
}

// chaosSchedule is one generated schedule.
type chaosSchedule struct {
	ops   []chaosOp
	kills []time.Duration // each child is killed this long after it is ready
}

func makeChaosSchedule(seed uint64) chaosSchedule {
	rng := rand.New(rand.NewPCG(seed, 0))
	var s chaosSchedule
	n := 5 + rng.IntN(5)
	for i := range n {
		op := chaosOp{I: len(s.ops), Text: fmt.Sprintf("m%d", i), Mode: string(sessions.ModeQueue)}
		switch r := rng.IntN(8); {
		case r < 2:
			op.Mode = string(sessions.ModeSteer)
		case r < 4:
			op.Mode = string(sessions.ModeInterrupt)
		}
		if rng.IntN(2) == 0 {
			op.Key = fmt.Sprintf("k%d", i)
		}
		s.ops = append(s.ops, op)
		if op.Key != "" && rng.IntN(4) == 0 { // a caller's retry of a send that went through
			again := op
			again.I = len(s.ops)
			s.ops = append(s.ops, again)
		}
	}
	for range 1 + rng.IntN(3) {
		s.kills = append(s.kills, time.Duration(10+rng.IntN(150))*time.Millisecond)
	}
	return s
}

// sent is what the parent knows of one op.
type sentOp struct {
	tried, acked bool
	msgID        string
	dup          bool
}

func TestSessionChaosProperties(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills processes")
	}
	t.Parallel()
	for k := range sessionChaosSchedules {
		seed := uint64(0x5e5510 + k)
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			sched := makeChaosSchedule(seed)
			if err := runChaosSchedule(t, seed, sched); err != nil {
				t.Fatalf("seed %d, schedule %+v: %v", seed, sched, err)
			}
		})
	}
}

func runChaosSchedule(t *testing.T, seed uint64, sched chaosSchedule) error {
	dir := t.TempDir()
	env := sessionChaosEnv{DB: filepath.Join(dir, "hitch.db"), Effects: filepath.Join(dir, "effects.log"),
		Requests: filepath.Join(dir, "requests.jsonl"), Seed: seed}
	state := make([]sentOp, len(sched.ops))
	pending := append([]chaosOp(nil), sched.ops...)
	kills := 0
	for c, after := range sched.kills {
		env.Ops = pending
		env.Seed = seed*16 + uint64(c)
		out, err := killSessionChild(env, after)
		if err != nil {
			return fmt.Errorf("child %d: %w", c, err)
		}
		kills++
		for _, line := range out {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			var i int
			fmt.Sscan(f[1], &i)
			switch {
			case f[0] == "TRY":
				state[i].tried = true
			case f[0] == "SENT" && len(f) == 4:
				state[i] = sentOp{tried: true, acked: true, msgID: f[2], dup: f[3] == "true"}
			}
		}
		// Retry what was not sent, and, with the same key, what was
		// tried without an answer; an unkeyed send that was tried may or
		// may not have been admitted and is not sent again.
		var next []chaosOp
		for _, op := range pending {
			if st := state[op.I]; !st.acked && (!st.tried || op.Key != "") {
				next = append(next, op)
			}
		}
		pending = next
	}

	// A fresh process (this one) sends the rest, recovers and lets the
	// session come to rest.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rt, a, closeAll, err := sessionChaosRuntime(ctx, env)
	if err != nil {
		return err
	}
	defer closeAll()
	if _, _, err := rt.Sessions().Open(ctx, a, sessions.Options{ID: sessionChaosSession}); err != nil {
		return err
	}
	sweepCtx, stop := context.WithCancel(ctx)
	swept := make(chan struct{})
	go func() { defer close(swept); _ = rt.Sweep(sweepCtx, 10*time.Millisecond) }()
	defer func() { stop(); <-swept }()
	for _, op := range pending {
		res, err := rt.Sessions().Send(ctx, sessionChaosSession, op.Text, sessions.SendOptions{Mode: sessions.Mode(op.Mode), IdempotencyKey: op.Key})
		if err != nil {
			return fmt.Errorf("send %d: %w", op.I, err)
		}
		state[op.I] = sentOp{tried: true, acked: true, msgID: res.MessageID, dup: res.Duplicate}
	}
	st, err := rt.Sessions().Await(ctx, sessionChaosSession)
	if err != nil {
		return fmt.Errorf("await: %w", err)
	}
	if st.Session.ActiveRun != "" || len(st.Queue) != 0 {
		return fmt.Errorf("not at rest: active %q, %d queued", st.Session.ActiveRun, len(st.Queue))
	}
	err = checkChaosSession(ctx, rt, env, sched, state)
	if err != nil {
		// The session's story, for whoever reads the failure.
		es, _ := rt.Sessions().Journal(ctx, sessionChaosSession, 0, 10000)
		for _, e := range es {
			t.Logf("session %d %s %s", e.Pos, e.Kind, e.Data)
		}
	}
	t.Logf("%d sends, %d kills, %d submissions", len(sched.ops), kills, len(st.Submissions))
	return err
}

// killSessionChild starts a child, SIGKILLs it after a while and returns
// the lines it printed.
func killSessionChild(env sessionChaosEnv, after time.Duration) ([]string, error) {
	v, _ := json.Marshal(env)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	testproc.DieWithParent(cmd)
	cmd.Env = append(os.Environ(), "HITCH_SESSION_CHAOS="+string(v))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var got []string
	select {
	case l, ok := <-lines:
		if !ok || l != "READY" {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return nil, fmt.Errorf("the child did not start (%q)", l)
		}
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("the child did not start")
	}
	time.Sleep(after) // a random moment, not a synchronisation
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return nil, err
	}
	for l := range lines {
		got = append(got, l)
	}
	_ = cmd.Wait()
	return got, nil
}

// checkChaosSession checks the three properties from the session journal,
// the run journals and the recorded requests.
func checkChaosSession(ctx context.Context, rt *hitch.Runtime, env sessionChaosEnv, sched chaosSchedule, state []sentOp) error {
	es, err := rt.Sessions().Journal(ctx, sessionChaosSession, 0, 10000)
	if err != nil {
		return err
	}
	type admittedMsg struct {
		hitchtype.MessageAdmitted
		pos int64
	}
	admitted := map[string]admittedMsg{} // by id
	byText := map[string][]string{}
	byKey := map[string][]string{}
	worked := map[string]int{} // message → times started or joined
	var startedOrder []string  // message ids in start order
	runOf := map[string]string{}
	ended := map[string]int{}
	endOf := map[string]hitchtype.SubmissionEnded{}
	interrupted := map[string]bool{}
	joinedTo := map[string]string{}
	for _, e := range es {
		switch e.Kind {
		case hitchtype.KindMessageAdmitted:
			var m hitchtype.MessageAdmitted
			if err := json.Unmarshal(e.Data, &m); err != nil {
				return err
			}
			admitted[m.ID] = admittedMsg{m, e.Pos}
			byText[m.Text] = append(byText[m.Text], m.ID)
			if m.IdempotencyKey != "" {
				byKey[m.IdempotencyKey] = append(byKey[m.IdempotencyKey], m.ID)
			}
		case hitchtype.KindSubmissionStarted:
			var m hitchtype.SubmissionStarted
			if err := json.Unmarshal(e.Data, &m); err != nil {
				return err
			}
			worked[m.MessageID]++
			startedOrder = append(startedOrder, m.MessageID)
			if runOf[m.MessageID] != "" {
				return fmt.Errorf("message %s started twice", m.MessageID)
			}
			runOf[m.MessageID] = m.RunID
			if m.Text != admitted[m.MessageID].Text {
				return fmt.Errorf("message %s started with text %q, admitted %q", m.MessageID, m.Text, admitted[m.MessageID].Text)
			}
		case hitchtype.KindMessageJoined:
			var m hitchtype.MessageJoined
			if err := json.Unmarshal(e.Data, &m); err != nil {
				return err
			}
			worked[m.ID]++
			joinedTo[m.ID] = m.RunID
		case hitchtype.KindSubmissionInterrupt:
			var m hitchtype.SubmissionInterrupted
			if err := json.Unmarshal(e.Data, &m); err != nil {
				return err
			}
			interrupted[m.RunID] = true
		case hitchtype.KindSubmissionEnded:
			var m hitchtype.SubmissionEnded
			if err := json.Unmarshal(e.Data, &m); err != nil {
				return err
			}
			ended[m.RunID]++
			endOf[m.RunID] = m
		}
	}

	// (2) No acknowledged message lost, none admitted twice; a key
	// answers with its one admission.
	for text, ids := range byText {
		if len(ids) != 1 {
			return fmt.Errorf("%q admitted %d times", text, len(ids))
		}
	}
	for key, ids := range byKey {
		if len(ids) != 1 {
			return fmt.Errorf("key %s admitted %d times", key, len(ids))
		}
	}
	for _, op := range sched.ops {
		s := state[op.I]
		if !s.acked {
			continue
		}
		ids := byText[op.Text]
		if len(ids) != 1 || ids[0] != s.msgID {
			return fmt.Errorf("send %d (%q) was acknowledged as %s; admitted as %v", op.I, op.Text, s.msgID, ids)
		}
	}
	for id, m := range admitted {
		if worked[id] != 1 {
			return fmt.Errorf("message %s (%q, %s) started or joined %d times, want 1", id, m.Text, m.Mode, worked[id])
		}
	}
	// Queued messages start in admission order; interrupts go first, in
	// their own admission order.
	var lastQueued, lastInterrupt int64
	for _, id := range startedOrder {
		m := admitted[id]
		last := &lastQueued
		if m.Mode == sessions.ModeInterrupt {
			last = &lastInterrupt
		}
		if m.pos < *last {
			return fmt.Errorf("message %s (%q, %s, position %d) started after one admitted later (position %d): start order %v",
				id, m.Text, m.Mode, m.pos, *last, startedOrder)
		}
		*last = m.pos
	}

	// (3) Each submission ends exactly once, its run once; an aborted one
	// was interrupted, the others completed.
	for msg, run := range runOf {
		if ended[run] != 1 {
			return fmt.Errorf("submission %s (run %s) has %d ends", msg, run, ended[run])
		}
		end := endOf[run]
		switch end.Outcome {
		case hitchtype.SubmissionAborted:
			if !interrupted[run] {
				return fmt.Errorf("submission %s aborted without an interrupt: %+v", msg, end)
			}
		case hitchtype.SubmissionCompleted:
			if end.Answer != "done" {
				return fmt.Errorf("submission %s answered %q", msg, end.Answer)
			}
		default:
			return fmt.Errorf("submission %s ended %+v", msg, end)
		}
		rj, err := rt.Journal(ctx, run, 0, 10000)
		if err != nil {
			return err
		}
		if n := strings.Count(kinds(rj), hitchtype.KindRunEnded); n != 1 {
			return fmt.Errorf("run %s has %d run.ended entries", run, n)
		}
		steered := map[string]bool{}
		for _, e := range rj {
			if e.Kind == hitchtype.KindSessionSteered {
				var s hitchtype.SessionSteered
				if err := json.Unmarshal(e.Data, &s); err != nil {
					return err
				}
				if steered[s.MessageID] {
					return fmt.Errorf("run %s: %s steered it twice", run, s.MessageID)
				}
				steered[s.MessageID] = true
				if joinedTo[s.MessageID] != run {
					return fmt.Errorf("run %s was steered by %s, which the session says joined %q", run, s.MessageID, joinedTo[s.MessageID])
				}
			}
		}
	}
	for id, run := range joinedTo {
		if ended[run] != 1 {
			return fmt.Errorf("message %s joined run %s, which is no ended submission", id, run)
		}
	}

	// (1) Every provider request is a valid transcript; the last one
	// holds every message of the session.
	b, err := os.ReadFile(env.Requests)
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var last model.Request
	for i, line := range lines {
		var req model.Request
		if err := json.Unmarshal([]byte(line), &req); err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
		if err := hitchtest.TranscriptError(&req); err != nil {
			return fmt.Errorf("request %d of %d: %w", i, len(lines), err)
		}
		last = req
	}
	seen := map[string]bool{}
	for _, msg := range last.Messages {
		if msg.Role == model.RoleUser {
			seen[msg.Text] = true
		}
	}
	for _, m := range admitted {
		if !seen[m.Text] {
			return fmt.Errorf("the last request lacks %q (%s); it is %s", m.Text, m.Mode, lines[len(lines)-1])
		}
	}
	return nil
}

// A steer message marked joined by a runner that died before journaling
// session.steered, in a submission that is then interrupted (so it reaches
// no further boundary), is not lost: the later submissions' transcript holds
// it after the interrupted work. Found by TestSessionChaosProperties (seed
// 6182161).
func TestSessionJoinedSteerOfAnInterruptedSubmissionIsKept(t *testing.T) {
	t.Parallel()
	inModel := make(chan struct{}, 1)
	m := &funcModel{fn: func(ctx context.Context, req *model.Request) (*model.Reply, error) {
		if lastUser(req) == "task" {
			inModel <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return text("re: " + lastUser(req)), nil
	}}
	a := build(t, hitch.Spec{Name: "chat", Model: m})
	rt, st := setup(t, a)
	s := openSession(t, rt, a, "lost-steer")
	send(t, rt, s.ID, "task", sessions.SendOptions{})
	<-inModel
	steer := send(t, rt, s.ID, "mind the steer", sessions.SendOptions{Mode: sessions.ModeSteer})
	got, err := rt.Sessions().Get(t.Context(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	// What a runner does at a boundary before it died: the message is
	// joined to its run; its session.steered never reached the journal.
	data, _ := json.Marshal(hitchtype.MessageJoined{ID: steer.MessageID, RunID: got.ActiveRun})
	if _, err := st.(store.SessionStore).SessionAppend(t.Context(), store.SessionAppendParams{SessionID: s.ID,
		After: store.AnyPosition, Kind: hitchtype.KindMessageJoined, Data: data}); err != nil {
		t.Fatal(err)
	}
	send(t, rt, s.ID, "stop", sessions.SendOptions{Mode: sessions.ModeInterrupt})
	status := awaitSession(t, rt, s.ID)
	if len(status.Submissions) != 2 || status.Submissions[0].Outcome != hitchtype.SubmissionAborted {
		t.Fatalf("submissions: %+v", status.Submissions)
	}
	reqs := m.requests()
	last := reqs[len(reqs)-1]
	if err := hitchtest.TranscriptError(last); err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, msg := range last.Messages {
		if msg.Role == model.RoleUser {
			users = append(users, msg.Text)
		}
	}
	if want := "task|mind the steer|stop"; strings.Join(users, "|") != want {
		t.Fatalf("the next submission's user messages are %q, want %q", strings.Join(users, "|"), want)
	}
}
