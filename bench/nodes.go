package bench

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/postgres"
	"github.com/hitch-dev/hitch/store/sqlite"
)

// NodesParams describe a measurement on several worker processes sharing
// one store: a backlog of Runs is started detached once every node is up,
// and the nodes' sweepers share it.
type NodesParams struct {
	Params
	// Nodes is how many worker processes to start (1 to 64).
	Nodes int
	// Postgres, when set, is the PostgreSQL database the nodes share, in a
	// fresh schema dropped at the end; otherwise a SQLite file (Params.DB).
	Postgres string
	// Command starts one node: the arguments that make this binary serve
	// as a node (see ServeNode), to which the node's flags are appended.
	Command []string
	// Poll is how often each node's sweeper looks for due runs.
	Poll time.Duration
}

// NodesResult is one measurement on several nodes.
type NodesResult struct {
	NodesParams
	Elapsed time.Duration
	// Ended counts the runs each node ended, by node name.
	Ended map[string]int
}

// Line is the RESULT line of a measurement on several nodes.
func (r NodesResult) Line() string {
	mode := "sqlite-" + strings.ToLower(r.Sync.String())
	if r.Postgres != "" {
		mode = "postgres"
	}
	var share []string
	for _, n := range slices.Sorted(maps.Keys(r.Ended)) {
		share = append(share, fmt.Sprintf("%s:%d(%.1f%%)", n, r.Ended[n], 100*float64(r.Ended[n])/float64(max(r.Runs, 1))))
	}
	return fmt.Sprintf("RESULT peer=hitch mode=%s nodes=%d poll=%s runs=%d steps=%d model_latency=%s jitter=%s run_s=%.4f steps_per_s=%.0f share=%s",
		mode, r.Nodes, r.Poll, r.Runs, r.Steps, r.ModelLatency, r.ModelJitter, r.Elapsed.Seconds(),
		float64(r.Runs*r.Steps)/r.Elapsed.Seconds(), strings.Join(share, ","))
}

// RunNodes starts p.Nodes worker processes on one fresh store, waits until
// each is up, starts p.Runs runs detached as fast as it can, and measures
// until every run has completed; each node then reports how many runs it
// ended.
func RunNodes(ctx context.Context, p NodesParams) (NodesResult, error) {
	if p.Nodes < 1 || p.Nodes > 64 {
		return NodesResult{}, fmt.Errorf("bench: %d nodes: want 1 to 64", p.Nodes)
	}
	agent, err := Agent(p.Steps, false)
	if err != nil {
		return NodesResult{}, err
	}
	st, nodeArgs, cleanup, err := openShared(ctx, p.Postgres, p.DB, p.Sync)
	if err != nil {
		return NodesResult{}, err
	}
	defer cleanup()
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{agent}, Node: "starter"})
	if err != nil {
		return NodesResult{}, err
	}
	defer rt.Close(context.Background())

	nodes := make([]*nodeProc, p.Nodes)
	defer func() {
		for _, n := range nodes {
			if n != nil {
				n.kill()
			}
		}
	}()
	for i := range nodes {
		args := append(slices.Clone(p.Command), nodeArgs...)
		args = append(args, "--node-name", fmt.Sprintf("node%d", i+1), "--steps", strconv.Itoa(p.Steps),
			"--model-latency", p.ModelLatency.String(), "--jitter", p.ModelJitter.String(), "--poll", p.Poll.String())
		if p.MaxRunners > 0 {
			args = append(args, "--max-runners", strconv.Itoa(p.MaxRunners))
		}
		n, err := startNode(args)
		if err != nil {
			return NodesResult{}, err
		}
		nodes[i] = n
	}
	for _, n := range nodes {
		if err := n.ready(ctx); err != nil {
			return NodesResult{}, err
		}
	}

	begin := time.Now()
	if err := startDetached(ctx, rt, agent, p.Runs); err != nil {
		return NodesResult{}, err
	}
	for {
		counts, err := store.RunCounts(ctx, st, "")
		if err != nil {
			return NodesResult{}, err
		}
		done := 0
		for s, n := range counts {
			if s.Terminal() {
				done += n
			}
		}
		if done == p.Runs {
			if n := counts[hitchtype.StatusCompleted]; n != p.Runs {
				return NodesResult{}, fmt.Errorf("bench: %d of %d runs completed: %v", n, p.Runs, counts)
			}
			break
		}
		select {
		case <-ctx.Done():
			return NodesResult{}, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	res := NodesResult{NodesParams: p, Elapsed: time.Since(begin), Ended: map[string]int{}}
	for _, n := range nodes {
		name, ended, err := n.stop()
		if err != nil {
			return res, err
		}
		res.Ended[name] = ended
	}
	return res, nil
}

// startDetached starts runs bench-0 … bench-(n-1) of agent detached, from
// 16 goroutines: a worker drives them.
func startDetached(ctx context.Context, rt *hitch.Runtime, agent *hitch.Agent, n int) error {
	var wg sync.WaitGroup
	var startErr atomic.Pointer[error]
	next := atomic.Int64{}
	for range 16 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				_, err := rt.Start(ctx, agent, fmt.Sprintf("add numbers #%d", i), hitch.WithID(fmt.Sprintf("bench-%d", i)), hitch.Detached())
				if err != nil {
					startErr.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	if e := startErr.Load(); e != nil {
		return *e
	}
	return nil
}

// nodeProc is one worker process.
type nodeProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	errs  strings.Builder
}

func startNode(args []string) (*nodeProc, error) {
	cmd := exec.Command(args[0], args[1:]...)
	n := &nodeProc{cmd: cmd, lines: make(chan string, 16)}
	cmd.Stderr = &n.errs
	var err error
	if n.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start a node: %w", err)
	}
	go func() {
		defer close(n.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			n.lines <- sc.Text()
		}
	}()
	return n, nil
}

// ready waits for the node's READY line.
func (n *nodeProc) ready(ctx context.Context) error { return n.await(ctx, "READY") }

// await waits for the node to print want on a line of its own.
func (n *nodeProc) await(ctx context.Context, want string) error {
	for {
		select {
		case line, ok := <-n.lines:
			if !ok {
				_ = n.cmd.Wait()
				return fmt.Errorf("bench: a node exited before it printed %s: %s", want, n.errs.String())
			}
			if line == want {
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// stop asks the node to drain and exit, and reads what it ended.
func (n *nodeProc) stop() (name string, ended int, err error) {
	_ = n.stdin.Close()
	for line := range n.lines {
		if rest, ok := strings.CutPrefix(line, "ENDED "); ok {
			f := strings.Fields(rest)
			if len(f) == 2 {
				name = f[0]
				ended, err = strconv.Atoi(f[1])
			}
		}
	}
	if werr := n.cmd.Wait(); werr != nil {
		return name, ended, fmt.Errorf("bench: node %s: %w: %s", name, werr, n.errs.String())
	}
	if name == "" {
		return name, ended, errors.New("bench: a node did not say what it ended")
	}
	return name, ended, err
}

func (n *nodeProc) kill() {
	if n.cmd.ProcessState == nil && n.cmd.Process != nil {
		_ = n.cmd.Process.Kill()
		_ = n.cmd.Wait()
	}
}

// NodeParams describe one node of RunNodes, as its flags give them.
type NodeParams struct {
	Params
	Name          string
	Store, Schema string
	Poll          time.Duration
	// LeaseTTL is the node's lease (0: the runtime's default).
	LeaseTTL time.Duration
	// InFlight, when set, makes the node print IN_FLIGHT once its model
	// has received that many requests.
	InFlight int
	// Firsts makes the node print "FIRST <unix ns> <input>" at each run's
	// first model request (RunWake).
	Firsts bool
	In     io.Reader
	Out    io.Writer
}

// ServeNode is one node of RunNodes: it opens the store, drives the
// workload's runs with its sweeper, prints READY once it sweeps, and on
// the end of In (its parent closing its standard input) drains, prints
// "ENDED <name> <runs it ended>" and returns.
func ServeNode(ctx context.Context, p NodeParams) error {
	var st store.Store
	var err error
	if strings.HasPrefix(p.Store, "postgres://") || strings.HasPrefix(p.Store, "postgresql://") {
		st, err = postgres.Open(ctx, p.Store, postgres.WithSchema(p.Schema))
	} else {
		st, err = sqlite.Open(ctx, p.Store, sqlite.WithSync(p.Sync))
	}
	if err != nil {
		return err
	}
	defer st.Close()
	lat := newLatencyModel(nil, p.ModelLatency, p.ModelJitter, 0)
	var outMu sync.Mutex
	agent, err := agent(p.Steps, false, func(m model.Model) model.Model {
		lat.Model = m
		if !p.Firsts {
			return lat
		}
		return &firstModel{Model: lat, seen: map[string]bool{}, out: func(input string, at time.Time) {
			outMu.Lock()
			defer outMu.Unlock()
			fmt.Fprintf(p.Out, "%s%d %s\n", firstLine, at.UnixNano(), input)
		}}
	})
	if err != nil {
		return err
	}
	var ended atomic.Int64
	if p.InFlight > 0 {
		lat.at(p.InFlight, func() { fmt.Fprintln(p.Out, "IN_FLIGHT") })
	}
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{agent}, Node: p.Name, MaxRunners: p.MaxRunners, LeaseTTL: p.LeaseTTL,
		OnEvent: func(ev hitch.Event) {
			for _, e := range ev.Entries {
				if e.Kind == hitchtype.KindRunEnded {
					ended.Add(1)
				}
			}
		}})
	if err != nil {
		return err
	}
	sweepCtx, stop := context.WithCancel(ctx)
	defer stop()
	swept := make(chan error, 1)
	go func() { swept <- rt.Sweep(sweepCtx, p.Poll) }()
	outMu.Lock()
	fmt.Fprintln(p.Out, "READY")
	outMu.Unlock()
	_, _ = io.Copy(io.Discard, p.In)
	stop()
	if err := <-swept; err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(context.Background(), hitch.DefaultDrainWindow)
	defer cancel()
	if err := rt.Close(cctx); err != nil {
		return err
	}
	outMu.Lock()
	defer outMu.Unlock()
	fmt.Fprintf(p.Out, "ENDED %s %d\n", p.Name, ended.Load())
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// dropSchema drops a schema RunNodes made, bounded.
func dropSchema(url, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
}
