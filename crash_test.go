package hitch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/tool"
)

// The crash tests run real runs in a child process (this test binary,
// re-executed), kill it with SIGKILL at a chosen point, and recover the runs
// in the test process from the same SQLite file. Tool bodies append a line
// to an effects file, so the test can count how often each really ran.

const (
	crashRuns     = 3
	crashLeaseTTL = 300 * time.Millisecond
)

func TestMain(m *testing.M) {
	if mode := os.Getenv("HITCH_CRASH_MODE"); mode == "chaos" {
		os.Exit(chaosChild(os.Getenv("HITCH_CRASH_DB"), os.Getenv("HITCH_CRASH_EFFECTS")))
	} else if mode == "drain" {
		os.Exit(drainChild(os.Getenv("HITCH_CRASH_DB"), os.Getenv("HITCH_CRASH_EFFECTS")))
	} else if mode == "charges" {
		os.Exit(chargesChild(os.Getenv("HITCH_CRASH_DB")))
	} else if mode == "ended" {
		os.Exit(endedChild(os.Getenv("HITCH_CRASH_DB")))
	} else if mode == "replay" {
		os.Exit(replayChild(os.Getenv("HITCH_CRASH_DB"), os.Getenv("HITCH_CRASH_EFFECTS")))
	} else if mode == "wakes" {
		os.Exit(wakesChild(os.Getenv("HITCH_CRASH_DB")))
	} else if mode == "inflight" {
		os.Exit(inflightChild(os.Getenv("HITCH_CRASH_DB"), os.Getenv("HITCH_CRASH_EFFECTS")))
	} else if mode == "family" {
		os.Exit(familyChild(os.Getenv("HITCH_CRASH_DB"), os.Getenv("HITCH_CRASH_EFFECTS")))
	} else if mode != "" {
		os.Exit(crashChild(mode, os.Getenv("HITCH_CRASH_DB"), os.Getenv("HITCH_CRASH_EFFECTS")))
	}
	// Runners, heartbeats, tool bodies and sweepers are goroutines: the
	// tests must leave none behind.
	goleak.VerifyTestMain(m)
}

// crashScript: an effect (not replayable), a lookup (replayable), an answer.
var crashScript = scripted.Script{Turns: []scripted.Turn{
	{Calls: []scripted.Call{{Name: "effect", Args: `{}`}}},
	{Calls: []scripted.Call{{Name: "lookup", Args: `{}`}}},
	{Text: "all done"},
}}

// crashAgent builds the agent both processes use. block names the point at
// which the child's runs stop forever: "model" (turn 2's model call),
// "effect" or "lookup" (inside that body); "" blocks nowhere.
// crashApprovers are shared by both processes' agents in the approval
// crash test; a proof never crosses the process boundary.
func crashApprovers() *approval.Static {
	a, err := approval.NewStatic(approval.Member{Name: "ops", Secret: "s", Requirements: []string{"*"}})
	if err != nil {
		panic(err)
	}
	return a
}

func crashAgentWith(effects, block string, marker func(string), pol policy.Policy, approvers approval.Approvers) (*hitch.Agent, error) {
	record := func(what string) error {
		f, err := os.OpenFile(effects, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = fmt.Fprintln(f, what)
		return err
	}
	body := func(name string) tool.Func[struct{}, string] {
		return func(ctx context.Context, _ struct{}) (string, error) {
			if err := record(name); err != nil {
				return "", err
			}
			if block == name {
				marker("IN_" + strings.ToUpper(name))
				select {} // hold here until the process is killed
			}
			return name + " ok", nil
		}
	}
	effect, err := tool.New("effect", "Acts on the world once.", body("effect"))
	if err != nil {
		return nil, err
	}
	lookup, err := tool.New("lookup", "Reads; safe to repeat.", body("lookup"), tool.WithReplay(3))
	if err != nil {
		return nil, err
	}
	var m model.Model = scripted.New("crash", crashScript)
	switch block {
	case "model":
		m = blockingModel{Model: m, marker: marker}
	case "requests", "turn3":
		// Each request goes to the effects file as a line of JSON; with
		// "turn3" the third is held until the process is killed.
		l := &requestLog{Model: m, w: func(b []byte) {
			if err := record("request " + string(b)); err != nil {
				panic(err)
			}
		}}
		if block == "turn3" {
			l.stall = func() { marker("IN_TURN3"); select {} }
		}
		m = l
	}
	return hitch.Build(hitch.Spec{Name: "crash", Model: m, Tools: []tool.Tool{effect, lookup}, Policy: pol, Approvers: approvers})
}

// approveEffect makes the effect wait for an approval; it counts how often
// it is asked.
func approveEffect(asked *atomic.Int64) policy.Policy {
	return policy.Func(func(_ context.Context, a policy.Action) (policy.Decision, error) {
		if a.Tool != "effect" {
			return policy.Decision{Verdict: policy.Allow}, nil
		}
		asked.Add(1)
		return policy.Decision{Verdict: policy.RequireApproval, Requirement: "ops"}, nil
	})
}

// blockingModel blocks forever on its second turn.
type blockingModel struct {
	model.Model
	marker func(string)
}

func (b blockingModel) Generate(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	if len(req.Messages) > 1 {
		b.marker("IN_MODEL")
		select {}
	}
	return b.Model.Generate(ctx, req)
}

// crashChild starts the runs and lets them reach the blocking point.
func crashChild(mode, db, effects string) int {
	ctx := context.Background()
	var mu sync.Mutex
	marker := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Println(s)
	}
	block := mode
	if mode == "between" || mode == "approved" {
		block = ""
	}
	var asked atomic.Int64
	approvers := crashApprovers()
	pol := policy.AllowAll()
	if mode == "approved" {
		pol = approveEffect(&asked)
	}
	cfg := hitch.Config{LeaseTTL: crashLeaseTTL}
	if mode == "lookup" {
		// A replayable body may run while the commit of its start is in
		// flight: the child says it is in the body only once that start
		// is durable too, so the kill finds it journaled.
		var (
			inner          = marker
			bodies, starts int
			said           int
			lmu            sync.Mutex
		)
		say := func() {
			for ; said < min(bodies, starts); said++ {
				inner("IN_LOOKUP")
			}
		}
		marker = func(s string) {
			lmu.Lock()
			defer lmu.Unlock()
			bodies++
			say()
		}
		cfg.OnEvent = func(ev hitch.Event) {
			for _, e := range ev.Entries {
				if e.Kind == "call.started" && strings.Contains(string(e.Data), `"call":"t2c1"`) {
					lmu.Lock()
					starts++
					say()
					lmu.Unlock()
				}
			}
		}
	}
	a, err := crashAgentWith(effects, block, marker, pol, approvers)
	if err != nil {
		return childFail(err)
	}
	cfg.Agents = []*hitch.Agent{a}
	if mode == "between" {
		// Stop each runner right after the append that records turn 2's
		// model attempt, before it acts on it.
		cfg.OnEvent = func(ev hitch.Event) {
			for _, e := range ev.Entries {
				if e.Kind == "model.attempt" && strings.Contains(string(e.Data), `"turn":2`) {
					marker("BETWEEN")
					select {}
				}
			}
		}
	}
	if mode == "approved" {
		// Stop right after the grant is durable, before the call starts.
		cfg.OnEvent = func(ev hitch.Event) {
			for _, e := range ev.Entries {
				if e.Kind == "approval.granted" {
					marker("APPROVED")
					select {}
				}
			}
		}
	}
	rt, err := childOpen(ctx, db, cfg)
	if err != nil {
		return childFail(err)
	}
	if mode == "approved" {
		for i := range crashRuns {
			id := fmt.Sprintf("crash-%d", i)
			if _, err := rt.Start(ctx, a, "go", hitch.WithID(id)); err != nil {
				return childFail(err)
			}
			if _, err := rt.Await(ctx, id); err != nil {
				return childFail(err)
			}
			p, err := approvers.Check(ctx, approval.Credential{Name: "ops", Secret: "s"}, "ops")
			if err == nil {
				go func() { _ = rt.Approve(ctx, id, "t1c1", p) }()
			}
		}
		select {}
	}
	for i := range crashRuns {
		if _, err := rt.Start(ctx, a, "go", hitch.WithID(fmt.Sprintf("crash-%d", i))); err != nil {
			return childFail(err)
		}
	}
	select {}
}

func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("crash tests start processes")
	}
	for _, tc := range []struct {
		mode   string
		marker string
		// effects and lookups: how many bodies ran in all, both processes.
		effects, lookups int
		uncertain        bool
		// attempts: model attempts in all; an interrupted call counts.
		attempts int
		// lost: call.lost entries a run's journal holds.
		lost int
	}{
		{mode: "model", marker: "IN_MODEL", effects: crashRuns, lookups: crashRuns, attempts: 4},
		{mode: "effect", marker: "IN_EFFECT", effects: crashRuns, lookups: crashRuns, uncertain: true, attempts: 3},
		{mode: "lookup", marker: "IN_LOOKUP", effects: crashRuns, lookups: 2 * crashRuns, attempts: 3, lost: 1},
		{mode: "between", marker: "BETWEEN", effects: crashRuns, lookups: crashRuns, attempts: 4},
		// Killed between the durable grant and the call's start: the call
		// is dispatched once, and nobody is asked again.
		{mode: "approved", marker: "APPROVED", effects: crashRuns, lookups: crashRuns, attempts: 3},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			db, effects := filepath.Join(dir, "crash.db"), filepath.Join(dir, "effects.log")
			killChildAt(t, tc.mode, tc.marker, db, effects, crashRuns)

			var asked atomic.Int64
			pol := policy.AllowAll()
			if tc.mode == "approved" {
				pol = approveEffect(&asked)
			}
			a, err := crashAgentWith(effects, "", func(string) {}, pol, crashApprovers())
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rt, _ := setupAt(t, db, a)
			// The dead child's leases expire by the store's clock; then the
			// runs are due and this process claims them.
			claimed := 0
			for claimed < crashRuns {
				n, err := rt.Recover(ctx)
				if err != nil {
					t.Fatal(err)
				}
				claimed += n
				if ctx.Err() != nil {
					t.Fatalf("recovered %d of %d runs", claimed, crashRuns)
				}
				time.Sleep(20 * time.Millisecond)
			}
			for i := range crashRuns {
				id := fmt.Sprintf("crash-%d", i)
				run, err := rt.Await(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if tc.uncertain {
					if run.Status != hitchtype.StatusWaiting {
						t.Fatalf("%s: status %s, want waiting for reconciliation", id, run.Status)
					}
					if !strings.Contains(strings.Join(told(journal(t, rt, id)), "\n"), `call.uncertain {"call":"t1c1"`) {
						t.Fatalf("%s: the interrupted effect is not reported uncertain", id)
					}
					if err := rt.Reconcile(ctx, id, hitch.Reconciliation{Call: "t1c1", Output: "effect ok", By: "test"}); err != nil {
						t.Fatal(err)
					}
					if run, err = rt.Await(ctx, id); err != nil {
						t.Fatal(err)
					}
				}
				if run.Status != hitchtype.StatusCompleted || run.Outcome.Answer != "all done" {
					t.Fatalf("%s: status %s, outcome %+v", id, run.Status, run.Outcome)
				}
				if run.Outcome.Attempts != tc.attempts {
					t.Errorf("%s: %d model attempts, want %d", id, run.Outcome.Attempts, tc.attempts)
				}
				if n := strings.Count(kinds(journal(t, rt, id)), "run.ended"); n != 1 {
					t.Errorf("%s: %d terminal entries", id, n)
				}
				if n := strings.Count(kinds(journal(t, rt, id)), "call.lost"); n != tc.lost {
					t.Errorf("%s: %d lost attempts journaled, want %d", id, n, tc.lost)
				}
			}
			if asked.Load() != 0 {
				t.Errorf("the policy was asked %d times after recovery; a granted approval must not be asked again", asked.Load())
			}
			b, err := os.ReadFile(effects)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Count(string(b), "effect\n"); got != tc.effects {
				t.Errorf("non-replayable effect ran %d times, want %d", got, tc.effects)
			}
			if got := strings.Count(string(b), "lookup\n"); got != tc.lookups {
				t.Errorf("replayable lookup ran %d times, want %d", got, tc.lookups)
			}
		})
	}
}

// killChildAt runs the child until marker was printed want times, then
// SIGKILLs it.
func killChildAt(t *testing.T, mode, marker, db, effects string, want int) {
	t.Helper()
	cmd, lines := startChild(t, nil, "HITCH_CRASH_MODE="+mode, "HITCH_CRASH_DB="+db, "HITCH_CRASH_EFFECTS="+effects)
	awaitLine(t, cmd, lines, marker, want, func(l string) bool { return l == marker })
	killChild(t, cmd)
}

// crashTest kills a child process in mode once it printed marker, for a
// test that recovers what it left: it skips in short mode (crash tests
// start processes), runs in parallel, and returns the child's store and
// the file it wrote beside it (aux, "" for none).
func crashTest(t *testing.T, mode, marker, aux string) (db, auxPath string) {
	t.Helper()
	if testing.Short() {
		t.Skip("crash tests start processes")
	}
	t.Parallel()
	dir := t.TempDir()
	db = filepath.Join(dir, mode+".db")
	if aux != "" {
		auxPath = filepath.Join(dir, aux)
	}
	killChildAt(t, mode, marker, db, auxPath, 1)
	return db, auxPath
}

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
	db, effects := crashTest(t, "family", "IN_KID", "effects.log")

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
	db, requests := crashTest(t, "replay", "IN_TURN3", "requests.jsonl")
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
	if _, _, run := recoverAhead(t, ctx, db, "replay", a); run.Outcome.Answer != "3" {
		t.Fatalf("recovered run: %+v", run)
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

// holdingStore never finishes the appends hold picks: to the runner, they
// stay in flight until the process is killed.
type holdingStore struct {
	store.Store
	hold func(store.JournalAppendParams) bool
}

func (h holdingStore) JournalAppend(ctx context.Context, p store.JournalAppendParams) (store.Appended, error) {
	if h.hold(p) {
		select {}
	}
	return h.Store.JournalAppend(ctx, p)
}

// inflightChild runs the crash script on a store that never finishes the
// commit of turn 2's reply (with the lookup's start). The runner goes on
// meanwhile: the lookup body runs and turn 3's request is sent, which the
// child holds until it is killed.
func inflightChild(db, effects string) int {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, db)
	if err != nil {
		return childFail(err)
	}
	a, err := crashAgentWith(effects, "turn3", func(s string) { fmt.Println(s) }, policy.AllowAll(), nil)
	if err != nil {
		return childFail(err)
	}
	held := holdingStore{Store: st, hold: func(p store.JournalAppendParams) bool {
		return slices.ContainsFunc(p.Entries, func(e store.EntryInput) bool {
			return e.Kind == "model.reply" && strings.Contains(string(e.Data), `"turn":2`)
		})
	}}
	rt, err := hitch.Open(hitch.Config{Store: held, Agents: []*hitch.Agent{a}, LeaseTTL: crashLeaseTTL})
	if err != nil {
		return childFail(err)
	}
	if _, err := rt.Start(ctx, a, "go", hitch.WithID("inflight")); err != nil {
		return childFail(err)
	}
	select {}
}

// TestCrashWithACommitInFlight: the runner sends the next model request
// while the last step's commit is in flight, and a process killed then
// loses that step alone. Recovery asks for it again with the same request
// (invariant 7), runs the replayable lookup again, and never runs the
// effect, whose result was durable before the model was called, again.
func TestCrashWithACommitInFlight(t *testing.T) {
	db, effects := crashTest(t, "inflight", "IN_TURN3", "effects.log")
	sent := requestLines(t, effects)
	if len(sent) != 3 {
		t.Fatalf("the first process sent %d requests, want 3", len(sent))
	}
	a, err := crashAgentWith(effects, "requests", func(string) {}, policy.AllowAll(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rt, _, run := recoverAhead(t, ctx, db, "inflight", a)
	if run.Outcome.Answer != "all done" {
		t.Fatalf("recovered run: %+v", run)
	}
	// The lost step's attempt was never journaled; the one before it was,
	// and is recorded interrupted.
	if run.Outcome.Attempts != 4 {
		t.Errorf("%d model attempts, want 4", run.Outcome.Attempts)
	}
	got := kinds(journal(t, rt, "inflight"))
	for kind, want := range map[string]int{"model.interrupted": 1, "call.lost": 0, "call.uncertain": 0, "run.ended": 1} {
		if n := strings.Count(got, kind); n != want {
			t.Errorf("%d %s entries, want %d: %s", n, kind, want, got)
		}
	}
	again := requestLines(t, effects)[3:]
	if len(again) != 2 {
		t.Fatalf("the recovering process sent %d requests, want 2", len(again))
	}
	for i, req := range again {
		if !bytes.Equal(req, sent[i+1]) {
			t.Errorf("request %d rebuilt differs:\nbefore %s\nafter  %s", i+2, sent[i+1], req)
		}
	}
	b, err := os.ReadFile(effects)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\neffect\n"); n != 1 {
		t.Errorf("the effect ran %d times, want 1", n)
	}
	if n := strings.Count(string(b), "\nlookup\n"); n != 2 {
		t.Errorf("the lookup ran %d times, want 2 (once in each process)", n)
	}
}

// requestLines returns the requests logged to the effects file, in order.
func requestLines(t *testing.T, effects string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(effects)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for l := range bytes.Lines(b) {
		if r, ok := bytes.CutPrefix(l, []byte("request ")); ok {
			out = append(out, bytes.TrimSuffix(r, []byte("\n")))
		}
	}
	return out
}
