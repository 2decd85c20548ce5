package nodetest

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/bench"
	"github.com/hitch-dev/hitch/chaos"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/hitchtest"
	"github.com/hitch-dev/hitch/internal/pgtest"
	"github.com/hitch-dev/hitch/internal/testproc"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/sessions"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/postgres"
	"github.com/hitch-dev/hitch/tool"
)

// The multi-node chaos test runs three worker processes (this test binary,
// re-executed) on one PostgreSQL schema and, while they work through a few
// hundred runs, kills one at random with SIGKILL every 0.5–2 s and starts it
// again; once it stops one with SIGTERM (it must drain and give every lease
// back), once it pauses one with SIGSTOP for longer than a lease (the others
// take its runs over; resumed, its stale writes are refused) and twice it
// cuts every database connection of the nodes. Then it checks, from the
// journals and the effects file the tool bodies append to: no effect ran
// twice, no run is lost, every journal is gapless, every run has exactly one
// terminal entry or is parked on uncertain calls that ran at most once.

// The worker process's settings: leases short enough that a killed node's
// runs are taken over in seconds, and few runners per node, so that every
// node has work.
const (
	workerEnv      = "HITCH_NODES_WORKER"
	nodeLeaseTTL   = 2 * time.Second
	nodeMaxRunners = 16
	nodePoll       = time.Second
	nodeDrain      = 15 * time.Second
)

// chaosAgent's tool appends "run call node" to effects each time its body
// runs; it is not replayable, so each call may run at most once.
func chaosAgent(effects, node string) (*hitch.Agent, error) {
	effect, err := tool.New("effect", "Acts once.", func(ctx context.Context, _ struct{}) (string, error) {
		info, _ := tool.CallFrom(ctx)
		f, err := os.OpenFile(effects, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return "", err
		}
		_, err = fmt.Fprintf(f, "%s %s %s\n", info.RunID, info.Call, node) // one write: lines never interleave
		f.Close()
		if err != nil {
			return "", err
		}
		if err := randomPause(ctx, 200*time.Millisecond); err != nil {
			return "", err
		}
		return "ok", nil
	})
	if err != nil {
		return nil, err
	}
	// Six turns of calls, each reply taking half a second (a model's
	// latency), so that a run lasts some seconds and kills land inside.
	var turns []scripted.Turn
	for i := range 6 {
		calls := []scripted.Call{{Name: "effect"}}
		if i%2 == 1 {
			calls = append(calls, scripted.Call{Name: "effect"})
		}
		turns = append(turns, scripted.Turn{Calls: calls, Delay: 500 * time.Millisecond})
	}
	m := scripted.New("chaos", scripted.Script{Turns: append(turns, scripted.Turn{Text: "done", Delay: 200 * time.Millisecond})})
	return hitch.Build(hitch.Spec{Name: "chaos", Model: m, Tools: []tool.Tool{effect}, Policy: policy.AllowAll(),
		Limits: hitch.Limits{ModelAttempts: 100, RetryDelay: 10 * time.Millisecond}})
}

// workerMain is a node: it sweeps the schema until SIGTERM, then drains and
// exits 0 when every lease was given back in time.
func workerMain() int {
	url, schema, effects, name := os.Getenv("HITCH_NODES_URL"), os.Getenv("HITCH_NODES_SCHEMA"), os.Getenv("HITCH_NODES_EFFECTS"), os.Getenv("HITCH_NODES_NAME")
	ctx := context.Background()
	sigCtx, stop := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer stop()
	a, err := chaosAgent(effects, name)
	agents := []*hitch.Agent{a}
	if err == nil {
		var sa *hitch.Agent
		sa, err = sessionAgent(os.Getenv("HITCH_NODES_REQUESTS"))
		agents = append(agents, sa)
	}
	runners := nodeMaxRunners
	if steps, ok := strings.CutPrefix(os.Getenv("HITCH_NODES_AGENT"), "bench:"); ok {
		n, _ := strconv.Atoi(steps)
		a, err = bench.Agent(n, false)
		agents = []*hitch.Agent{a}
		runners = benchRuns
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	st, err := postgres.Open(ctx, url, postgres.WithSchema(schema), postgres.WithPollInterval(nodePoll))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer st.Close()
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: agents, Node: name, LeaseTTL: nodeLeaseTTL, MaxRunners: runners,
		OnEvent: func(ev hitch.Event) {
			if ev.Err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", name, ev.Err)
			}
		}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("READY")
	_ = rt.Sweep(sigCtx, nodePoll)
	dctx, cancel := context.WithTimeout(ctx, nodeDrain)
	defer cancel()
	if err := rt.Close(dctx); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

// node is one worker process.
type node struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed at its exit, which err holds
	err  error
}

// cluster starts and stops the worker processes of one test.
type cluster struct {
	t                     testing.TB
	url, schema, effects  string
	requests              string // the session agent's model requests
	dir                   string
	gen                   int
	nodes                 []*node
	appName               string
	kills, terms, pauses  int
	cuts, connsTerminated int
}

// start starts node i (again), with a name of its own, and waits until it
// is ready.
func (c *cluster) start(i int) {
	c.t.Helper()
	c.startWith(i)
}

// startWith starts node i with extra environment.
func (c *cluster) startWith(i int, env ...string) {
	c.t.Helper()
	c.gen++
	name := fmt.Sprintf("n%d.%d", i, c.gen)
	logf, err := os.Create(filepath.Join(c.dir, name+".log"))
	if err != nil {
		c.t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	testproc.DieWithParent(cmd)
	cmd.Env = append(os.Environ(), workerEnv+"=1", "HITCH_NODES_URL="+pgtest.WithParam(c.url, "application_name", c.appName),
		"HITCH_NODES_SCHEMA="+c.schema, "HITCH_NODES_EFFECTS="+c.effects, "HITCH_NODES_NAME="+name,
		"HITCH_NODES_REQUESTS="+cmp.Or(c.requests, os.DevNull))
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ready <- sc.Scan() && sc.Text() == "READY"
	}()
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case ok := <-ready:
		if !ok {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			c.t.Fatalf("node %s did not start: see %s", name, logf.Name())
		}
	case <-t.C:
		_ = cmd.Process.Kill()
		<-ready
		_ = cmd.Wait()
		c.t.Fatalf("node %s did not start within 30s", name)
	}
	n := &node{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { n.err = cmd.Wait(); close(n.done) }()
	if i < len(c.nodes) {
		c.nodes[i] = n
	} else {
		c.nodes = append(c.nodes, n)
	}
}

// wait waits, bounded, for node i to exit and returns how.
func (c *cluster) wait(i int, within time.Duration) error {
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case <-c.nodes[i].done:
		return c.nodes[i].err
	case <-t.C:
		_ = c.nodes[i].cmd.Process.Signal(syscall.SIGCONT)
		_ = c.nodes[i].cmd.Process.Kill()
		<-c.nodes[i].done
		return fmt.Errorf("node %s did not exit within %s", c.nodes[i].name, within)
	}
}

// stopAll stops every node that still runs, gracefully, and reports any
// that did not drain cleanly.
func (c *cluster) stopAll() {
	for i, n := range c.nodes {
		if n == nil {
			continue
		}
		_ = n.cmd.Process.Signal(syscall.SIGCONT)
		_ = n.cmd.Process.Signal(syscall.SIGTERM)
		if err := c.wait(i, nodeDrain+10*time.Second); err != nil {
			c.t.Errorf("stop %s: %v (see %s.log)", n.name, err, n.name)
		}
		c.nodes[i] = nil
	}
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil && d > 0 {
		return d
	}
	return def
}

// TestNodesChaos: see the top of this file and of sessions_test.go.
// HITCH_CHAOS_RUNS sets the number of runs (300), HITCH_CHAOS_MESSAGES the
// messages sent to HITCH_CHAOS_SESSIONS sessions (120 to 6),
// HITCH_CHAOS_TIMEOUT the bound on the whole test (150s).
func TestNodesChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("starts, kills and pauses worker processes")
	}
	url, schema := pgtest.URL(t), newSchema(t)
	runs := envInt("HITCH_CHAOS_RUNS", 300)
	messages, nsessions := envInt("HITCH_CHAOS_MESSAGES", 120), envInt("HITCH_CHAOS_SESSIONS", 6)
	ctx, cancel := context.WithTimeout(context.Background(), envDuration("HITCH_CHAOS_TIMEOUT", 150*time.Second))
	defer cancel()
	dir := t.TempDir()
	effects, requests := filepath.Join(dir, "effects.log"), filepath.Join(dir, "requests.jsonl")
	began := time.Now()

	// The test's own store creates the schema, the runs and the sessions.
	st := openStore(t, url, schema)
	a, err := chaosAgent(effects, "test")
	if err != nil {
		t.Fatal(err)
	}
	sa, err := sessionAgent(requests)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{a, sa}, Node: "starter"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	// The sender knows no agent: it admits messages, and only the nodes
	// start and work submissions.
	sendRT, err := hitch.Open(hitch.Config{Store: st, Node: "sender"})
	if err != nil {
		t.Fatal(err)
	}
	defer sendRT.Close(context.Background())
	sender := &sessionSender{rt: sendRT, total: messages, acked: map[string][]string{}, texts: map[string]string{}, done: make(chan struct{})}
	for i := range nsessions {
		s, _, err := rt.Sessions().Open(ctx, sa, sessions.Options{ID: fmt.Sprintf("s%02d", i)})
		if err != nil {
			t.Fatal(err)
		}
		sender.sessions = append(sender.sessions, s.ID)
	}
	db, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	runsTable := pgx.Identifier{schema, "hitch_runs"}.Sanitize()

	c := &cluster{t: t, url: url, schema: schema, effects: effects, requests: requests, dir: dir, appName: "hitchnode_" + schema}
	defer func() {
		for _, n := range c.nodes {
			if n != nil {
				_ = n.cmd.Process.Kill()
				<-n.done
			}
		}
		if t.Failed() {
			logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
			for _, l := range logs {
				if b, _ := os.ReadFile(l); len(b) > 0 && !strings.HasSuffix(l, "effects.log") {
					t.Logf("%s:\n%s", filepath.Base(l), tail(string(b), 2000))
				}
			}
		}
	}()
	for i := range 3 {
		c.start(i)
	}
	for i := range runs {
		if _, err := rt.Start(ctx, a, "go", hitch.WithID(fmt.Sprintf("r%05d", i)), hitch.Detached()); err != nil {
			t.Fatal(err)
		}
	}
	sendCtx, stopSending := context.WithCancel(ctx)
	defer func() { stopSending(); <-sender.done }()
	go sender.run(sendCtx, t)

	sessionsTable := pgx.Identifier{schema, "hitch_sessions"}.Sanitize()
	busy := func() int {
		var n, m int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM `+runsTable+` WHERE status IN ('queued', 'running')`).Scan(&n); err != nil {
			t.Fatalf("count busy runs: %v", err)
		}
		if err := db.QueryRow(ctx, `SELECT count(*) FROM `+sessionsTable+` WHERE active_run <> '' OR queued > 0`).Scan(&m); err != nil {
			t.Fatalf("count busy sessions: %v", err)
		}
		select {
		case <-sender.done:
		default:
			m++ // messages still to come
		}
		return n + m
	}
	var paused pauseReport
	for step := 0; ; step++ {
		left := busy()
		if left == 0 && step > 9 {
			break
		}
		if ctx.Err() != nil {
			c.stopAll()
			t.Fatalf("%d of %d runs still queued or running after %s (%d kills)", left, runs, time.Since(began).Round(time.Second), c.kills)
		}
		pace := time.NewTimer(time.Duration(500+rand.IntN(1500)) * time.Millisecond) // a random moment, not a synchronisation
		select {
		case <-pace.C:
		case <-ctx.Done():
			pace.Stop()
			continue
		}
		i := rand.IntN(len(c.nodes))
		switch step {
		case 1:
			c.terminate(ctx, db, runsTable, i)
		case 3:
			paused = c.pause(ctx, db, runsTable, i)
		case 5, 9:
			c.cut(ctx, db)
		default:
			_ = c.nodes[i].cmd.Process.Signal(syscall.SIGKILL)
			_ = c.wait(i, 10*time.Second)
			c.kills++
			c.start(i)
		}
	}
	c.stopAll()
	if n := leased(ctx, t, db, runsTable, ""); n > 0 {
		t.Errorf("%d run(s) still leased after every node stopped gracefully", n)
	}
	rep := check(t, ctx, st, effects, runs)
	srep := checkSessions(t, ctx, st, st, sender, requests)
	rep.pausedEffects = rep.uncertainBy[paused.name]
	t.Logf("%d runs on 3 nodes in %s: survived %d SIGKILLs, %d SIGTERM, %d SIGSTOP of %s (%d of its %d runs taken over meanwhile; %d uncertain calls had run their body on it), %d connection cuts (%d backends terminated)",
		runs, time.Since(began).Round(time.Second), c.kills, c.terms, c.pauses, paused.within, paused.takenOver, paused.held, rep.pausedEffects, c.cuts, c.connsTerminated)
	t.Logf("%d completed, %d parked on uncertain calls, %d effects, %d calls uncertain (each ran at most once), 0 duplicate effects",
		rep.completed, rep.parked, rep.effects, rep.uncertain)
	t.Logf("sessions: %d messages (%d sent to steer) to %d sessions, %d submissions, %d messages joined a running one, %d model requests, each a valid transcript",
		srep.messages, sender.steer, nsessions, srep.submissions, srep.joined, srep.requests)
}

// tail returns the end of s, at most n bytes.
func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// leased counts runs leased to owner (any owner when empty).
func leased(ctx context.Context, t testing.TB, db *pgx.Conn, runsTable, owner string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM `+runsTable+` WHERE lease_owner <> '' AND ($1 = '' OR lease_owner = $1)`, owner).Scan(&n); err != nil {
		t.Fatalf("count leases: %v", err)
	}
	return n
}

// terminate stops node i with SIGTERM: it must drain, exit 0 and leave no
// lease behind. Then it starts again.
func (c *cluster) terminate(ctx context.Context, db *pgx.Conn, runsTable string, i int) {
	c.t.Helper()
	name := c.nodes[i].name
	held := leased(ctx, c.t, db, runsTable, name)
	_ = c.nodes[i].cmd.Process.Signal(syscall.SIGTERM)
	if err := c.wait(i, nodeDrain+10*time.Second); err != nil {
		c.t.Errorf("SIGTERM %s: it did not drain cleanly: %v", name, err)
	}
	if n := leased(ctx, c.t, db, runsTable, name); n > 0 {
		c.t.Errorf("SIGTERM %s: %d run(s) still leased to it after its exit", name, n)
	}
	c.t.Logf("SIGTERM %s: held %d lease(s), drained and gave every one back", name, held)
	c.terms++
	c.start(i)
}

// pauseReport tells what a SIGSTOP did.
type pauseReport struct {
	name, within    string
	held, takenOver int
}

// pause stops node i with SIGSTOP for three lease lengths, then lets it go
// on: meanwhile the other nodes take its runs over, and once it resumes
// every write it tries under its old leases is refused.
func (c *cluster) pause(ctx context.Context, db *pgx.Conn, runsTable string, i int) pauseReport {
	c.t.Helper()
	n := c.nodes[i]
	tokens := map[string]int64{}
	rows, err := db.Query(ctx, `SELECT id, lease_token FROM `+runsTable+` WHERE lease_owner = $1`, n.name)
	if err != nil {
		c.t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var tok int64
		if err := rows.Scan(&id, &tok); err != nil {
			c.t.Fatal(err)
		}
		tokens[id] = tok
	}
	rows.Close()
	_ = n.cmd.Process.Signal(syscall.SIGSTOP)
	t := time.NewTimer(3 * nodeLeaseTTL) // the pause is the point, not a synchronisation
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
	}
	taken := 0
	for id, tok := range tokens {
		var now int64
		var status, owner string
		if err := db.QueryRow(ctx, `SELECT lease_token, status, lease_owner FROM `+runsTable+` WHERE id = $1`, id).Scan(&now, &status, &owner); err != nil {
			c.t.Fatal(err)
		}
		if now > tok || owner != n.name {
			taken++
		}
	}
	_ = n.cmd.Process.Signal(syscall.SIGCONT)
	c.pauses++
	return pauseReport{name: n.name, within: n.name, held: len(tokens), takenOver: taken}
}

// cut terminates every database connection of the nodes (their pools and
// listeners), as a database failover or a network cut would.
func (c *cluster) cut(ctx context.Context, db *pgx.Conn) {
	c.t.Helper()
	var n int
	err := db.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE pid <> pg_backend_pid() AND datname = current_database()
		  AND (application_name = $1 OR application_name = $2)`, c.appName, "hitch wake "+c.schema).Scan(&n)
	if err != nil {
		c.t.Fatalf("cut connections: %v", err)
	}
	c.cuts++
	c.connsTerminated += n
}

// report is what check found.
type report struct {
	completed, parked, effects, uncertain int
	pausedEffects                         int
	uncertainBy                           map[string]int // uncertain calls whose effect a node ran
}

// check verifies the invariants of every run with chaos.Verify (no
// duplicate or unjournaled effect, no lost run, no gap, no stuck run, one
// ending), then what this test asks more: every run completed or parked
// on uncertain calls, and every settled call's body run exactly once.
func check(t *testing.T, ctx context.Context, st store.Store, effects string, runs int) report {
	t.Helper()
	rep := report{uncertainBy: map[string]int{}}
	b, err := os.ReadFile(effects)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, runs)
	for i := range ids {
		ids[i] = fmt.Sprintf("r%05d", i)
	}
	verified, err := chaos.Verify(ctx, st, chaos.VerifyParams{Runs: ids, Effects: bytes.NewReader(b)})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range verified.Violations {
		t.Errorf("%s", v)
	}
	rep.effects = verified.Effects
	ran := map[string]int{}   // "run call" → bodies run
	by := map[string]string{} // "run call" → node that ran it
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(line); len(f) == 3 {
			ran[f[0]+" "+f[1]]++
			by[f[0]+" "+f[1]] = f[2]
		}
	}
	for _, id := range ids {
		run, err := st.RunGet(ctx, id)
		if err != nil {
			continue // Verify said it is lost
		}
		es, err := st.JournalRead(ctx, store.JournalReadParams{RunID: id, Limit: 10000})
		if err != nil {
			t.Errorf("%s: read journal: %v", id, err)
			continue
		}
		calls := hitchtest.CallsOf(es)
		for call := range calls.Settled {
			if n := ran[id+" "+call]; n != 1 {
				t.Errorf("%s %s: settled, but its body ran %d times", id, call, n)
			}
		}
		for call := range calls.Uncertain {
			rep.uncertain++
			if n := ran[id+" "+call]; n == 1 {
				rep.uncertainBy[by[id+" "+call]]++
			}
		}
		switch {
		case run.Status.Terminal():
			if run.Status == hitchtype.StatusCompleted {
				rep.completed++
			} else {
				t.Errorf("%s: ended %s: %s", id, run.Status, run.Outcome)
			}
		case run.Status == hitchtype.StatusWaiting:
			waiting := 0
			for call := range calls.Uncertain {
				if !calls.Reconciled[call] {
					waiting++
				}
			}
			if calls.Endings != 0 || waiting == 0 || len(calls.Open) > 0 {
				t.Errorf("%s: waiting with %d terminal entries, %d uncertain calls, %d calls open", id, calls.Endings, waiting, len(calls.Open))
			}
			rep.parked++
		default:
			t.Errorf("%s: left %s", id, run.Status)
		}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("the test ran out of time")
	}
	return rep
}

// randomPause waits a random time under max, long enough for a node to be
// killed inside it sometimes, or until ctx ends.
func randomPause(ctx context.Context, max time.Duration) error {
	t := time.NewTimer(time.Duration(rand.Int64N(int64(max))))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
