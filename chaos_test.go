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
	"github.com/hitch-dev/hitch/internal/testproc"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
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
