package bench

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/postgres"
	"github.com/hitch-dev/hitch/store/sqlite"
)

// WakeParams describe a wake-latency measurement: this process starts
// runs one at a time, detached, and a worker process of this binary on the
// same store makes their model requests (or, with Here, this process's own
// sweeper); each sample is the time from a start to its run's first model
// request.
type WakeParams struct {
	// Samples is how many runs to start (1 to 10,000).
	Samples int
	// Steps is each run's steps; they run at once (zero model latency).
	Steps int
	// Postgres, when set, is the PostgreSQL database both processes share,
	// in a fresh schema dropped at the end; otherwise the SQLite file DB.
	Postgres string
	DB       string
	Sync     sqlite.Sync
	// Command starts the worker (see NodesParams.Command).
	Command []string
	// Here drives the runs with a sweeper in this process instead of a
	// worker process: what a store's notification within one process
	// saves.
	Here bool
	// Poll is the worker's sweep interval: the wake's safety net.
	Poll time.Duration
	// Timeout bounds one sample's wait for its first request.
	Timeout time.Duration
}

// WakeResult is a wake-latency measurement.
type WakeResult struct {
	WakeParams
	Wake Quantiles
}

// Line is the RESULT line of a wake-latency measurement.
func (r WakeResult) Line() string {
	mode := "sqlite-" + strings.ToLower(r.Sync.String())
	if r.Postgres != "" {
		mode = "postgres"
	}
	if r.Here {
		mode += "-one-process"
	}
	return fmt.Sprintf("RESULT peer=hitch mode=%s wake_samples=%d poll=%s wake_ms_p50=%.1f p99=%.1f max=%.1f",
		mode, r.Wake.Samples, r.Poll, ms(r.Wake.P50), ms(r.Wake.P99), ms(r.Wake.Max))
}

// wakeWarmup is how many runs go first, unmeasured: they open the
// processes' store connections and prepare their statements.
const wakeWarmup = 3

// firstLine is what a worker of a wake measurement prints at a run's first
// model request: the run's input and the wall-clock time in nanoseconds.
const firstLine = "FIRST "

// RunWake measures how long a run started on one process waits for another
// process to make its first model request.
func RunWake(ctx context.Context, p WakeParams) (WakeResult, error) {
	if p.Samples < 1 || p.Samples > 10000 {
		return WakeResult{}, fmt.Errorf("bench: %d wake samples: want 1 to 10000", p.Samples)
	}
	p.Timeout = max(p.Timeout, 10*p.Poll, 10*time.Second)
	if p.Here {
		return runWakeHere(ctx, p)
	}
	agent, err := Agent(p.Steps, false)
	if err != nil {
		return WakeResult{}, err
	}
	st, nodeArgs, cleanup, err := openShared(ctx, p.Postgres, p.DB, p.Sync)
	if err != nil {
		return WakeResult{}, err
	}
	defer cleanup()
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{agent}, Node: "starter"})
	if err != nil {
		return WakeResult{}, err
	}
	defer rt.Close(context.Background())

	args := append(slices.Clone(p.Command), nodeArgs...)
	args = append(args, "--node-name", "worker", "--node-firsts", "--steps", strconv.Itoa(p.Steps), "--poll", p.Poll.String())
	n, err := startNode(args)
	if err != nil {
		return WakeResult{}, err
	}
	defer n.kill()
	if err := n.ready(ctx); err != nil {
		return WakeResult{}, err
	}
	var waits []time.Duration
	for i := range wakeWarmup + p.Samples {
		input := fmt.Sprintf("add numbers #%d", i)
		begin := time.Now()
		if _, err := rt.Start(ctx, agent, input, hitch.WithID(fmt.Sprintf("wake-%d", i)), hitch.Detached()); err != nil {
			return WakeResult{}, err
		}
		at, err := n.first(ctx, input, p.Timeout)
		if err != nil {
			return WakeResult{}, err
		}
		if i >= wakeWarmup {
			waits = append(waits, at.Sub(begin))
		}
	}
	if _, _, err := n.stop(); err != nil {
		return WakeResult{}, err
	}
	return WakeResult{WakeParams: p, Wake: quantiles(waits)}, nil
}

// runWakeHere is RunWake with the runs driven by this process's sweeper.
func runWakeHere(ctx context.Context, p WakeParams) (WakeResult, error) {
	firsts := make(chan time.Time, 1)
	agent, err := agent(p.Steps, false, func(m model.Model) model.Model {
		return &firstModel{Model: m, seen: map[string]bool{}, out: func(_ string, at time.Time) { firsts <- at }}
	})
	if err != nil {
		return WakeResult{}, err
	}
	st, _, cleanup, err := openShared(ctx, p.Postgres, p.DB, p.Sync)
	if err != nil {
		return WakeResult{}, err
	}
	defer cleanup()
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{agent}, Node: "here"})
	if err != nil {
		return WakeResult{}, err
	}
	defer rt.Close(context.Background())
	sctx, stop := context.WithCancel(ctx)
	swept := make(chan error, 1)
	go func() { swept <- rt.Sweep(sctx, p.Poll) }()
	defer func() { stop(); <-swept }()
	var waits []time.Duration
	for i := range wakeWarmup + p.Samples {
		begin := time.Now()
		if _, err := rt.Start(ctx, agent, fmt.Sprintf("add numbers #%d", i), hitch.WithID(fmt.Sprintf("wake-%d", i)), hitch.Detached()); err != nil {
			return WakeResult{}, err
		}
		t := time.NewTimer(p.Timeout)
		select {
		case at := <-firsts:
			t.Stop()
			if i >= wakeWarmup {
				waits = append(waits, at.Sub(begin))
			}
		case <-t.C:
			return WakeResult{}, fmt.Errorf("bench: no model request for run %d within %s", i, p.Timeout)
		case <-ctx.Done():
			t.Stop()
			return WakeResult{}, ctx.Err()
		}
	}
	return WakeResult{WakeParams: p, Wake: quantiles(waits)}, nil
}

// first waits for the worker to say it made input's first request, and
// returns when.
func (n *nodeProc) first(ctx context.Context, input string, timeout time.Duration) (time.Time, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case line, ok := <-n.lines:
			if !ok {
				return time.Time{}, fmt.Errorf("bench: the worker exited: %s", n.errs.String())
			}
			rest, ok := strings.CutPrefix(line, firstLine)
			if !ok {
				continue
			}
			ns, in, _ := strings.Cut(rest, " ")
			if in != input {
				continue
			}
			v, err := strconv.ParseInt(ns, 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("bench: worker line %q: %w", line, err)
			}
			return time.Unix(0, v), nil
		case <-t.C:
			return time.Time{}, fmt.Errorf("bench: no model request for %q within %s", input, timeout)
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

// openShared opens a fresh store that worker processes share, and says
// how a worker opens it.
func openShared(ctx context.Context, url, db string, sync sqlite.Sync) (store.Store, []string, func(), error) {
	if url != "" {
		schema := "bench_" + randomHex(6)
		pg, err := postgres.Open(ctx, url, postgres.WithSchema(schema), postgres.WithAutoMigrate(true))
		if err != nil {
			return nil, nil, nil, err
		}
		return pg, []string{"--node-store", url, "--node-schema", schema}, func() { pg.Close(); dropSchema(url, schema) }, nil
	}
	sq, err := sqlite.Open(ctx, db, sqlite.WithSync(sync))
	if err != nil {
		return nil, nil, nil, err
	}
	return sq, []string{"--node-store", db, "--sync", sync.String()}, func() { sq.Close() }, nil
}

// firstModel tells out when a run, named by its input, makes its first
// model request.
type firstModel struct {
	model.Model
	mu   sync.Mutex
	seen map[string]bool
	out  func(input string, at time.Time)
}

func (m *firstModel) Generate(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	at, input := time.Now(), firstUser(req)
	m.mu.Lock()
	first := !m.seen[input]
	m.seen[input] = true
	m.mu.Unlock()
	if first {
		m.out(input, at)
	}
	return m.Model.Generate(ctx, req)
}
