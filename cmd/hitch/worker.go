package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/config"
	"github.com/hitch-dev/hitch/telemetry"
)

func newWorker(g *globals) *cobra.Command {
	var n nodeFlags
	var leaderTTL time.Duration
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Drive due runs and dispatch trigger bindings until interrupted: queued runs, expired leases, due wakes",
		Long: "Drive due runs until interrupted. The first SIGINT or SIGTERM stops claiming and drains: tool bodies\n" +
			"and model calls already started finish (for at most --drain), their results are journaled, and each run\n" +
			"is parked and its lease given back, so another worker resumes it at once. A second signal abandons\n" +
			"what is still running; those runs are recovered once their leases expire.\n\n" +
			"Every worker of a store also stands for its leadership: one at a time leads, for work that must not run\n" +
			"on every node at once. The worker says who leads whenever that changes (with --json, a line\n" +
			"{\"node\", \"leader\", \"leading\"} on stdout). A leader that is killed is replaced within --leader-ttl\n" +
			"and a third; one that drains resigns at once.",
		Args: args(0, "no arguments"),
		PreRunE: func(*cobra.Command, []string) error {
			if leaderTTL < 10*time.Millisecond || leaderTTL > 10*time.Minute {
				return usageError{fmt.Errorf("--leader-ttl %s: want 10ms to 10m", leaderTTL)}
			}
			return n.check()
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			g.metrics = nodeMetrics{gauges: true, cache: n.metricsCache}
			var e *env // set before Lead starts, the only caller of OnLeader
			e, err := openRuntimeConfig(ctx, g, runtimeOpts{create: true, set: func(c *hitch.Config) {
				c.LeaderTTL, c.OnLeader = leaderTTL, func(l string) { e.out.leader(g.stderr, "worker", e.rt.Node(), l) }
			}})
			if err != nil {
				return err
			}
			defer e.close()
			return runNode(ctx, g, e, "worker", n, nil)
		},
	}
	n.flags(cmd, g, "running work")
	cmd.Flags().DurationVar(&leaderTTL, "leader-ttl", hitch.DefaultLeaderTTL, "how long a leadership outlives its worker (re-elected every third)")
	return cmd
}

// nodeFlags are the flags of a node (hitch worker, hitch serve): how often
// it looks for due runs, how long its drain may last, and how long one
// reading of the store serves its gauges.
type nodeFlags struct {
	poll, drain, metricsCache time.Duration
}

// flags adds the node's flags, and --max-runners, to cmd; drained says what
// the drain lets finish.
func (n *nodeFlags) flags(cmd *cobra.Command, g *globals, drained string) {
	cmd.Flags().DurationVar(&n.poll, "poll", hitch.DefaultSweepInterval, "how often to look for due runs")
	cmd.Flags().DurationVar(&n.drain, "drain", hitch.DefaultDrainWindow, "on the first signal, how long "+drained+" may finish")
	cmd.Flags().DurationVar(&n.metricsCache, "metrics-cache", telemetry.DefaultMetricsCache,
		"how long one reading of the store serves hitch's gauges (0: read at every scrape or export)")
	maxRunnersFlag(cmd, g)
}

// check refuses a poll that is not more than 0, a negative drain (0
// abandons what runs at once) and a metrics cache out of its range.
func (n nodeFlags) check() error {
	switch {
	case n.poll <= 0:
		return usageError{fmt.Errorf("--poll %s: want more than 0", n.poll)}
	case n.drain < 0:
		return usageError{fmt.Errorf("--drain %s: want 0 (abandon at once) or more", n.drain)}
	case n.metricsCache < 0 || n.metricsCache > telemetry.MaxMetricsCache:
		return usageError{fmt.Errorf("--metrics-cache %s: want 0 to %s", n.metricsCache, telemetry.MaxMetricsCache)}
	}
	return nil
}

// runNode is the worker loop of a node (hitch worker, hitch serve): it
// stores the config's trigger bindings, dispatches them and drives due
// runs until the first SIGINT or SIGTERM, then drains: the
// runtime claims nothing new, lets started tool bodies and model calls
// finish for at most n.drain, parks each run and gives its lease back. A
// second signal abandons what still runs. The node stands for the store's
// leadership meanwhile, and resigns at the first signal. stopping, when
// set, is called at the first signal, before the drain (a server stops
// accepting there).
func runNode(ctx context.Context, g *globals, e *env, name string, n nodeFlags, stopping func()) error {
	// Count the signals here: the first ends ctx and starts the
	// drain, the second cuts it short.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	sweepCtx, stopSweep := context.WithCancel(ctx)
	defer stopSweep()
	drainCtx, abort := context.WithCancel(context.WithoutCancel(ctx))
	defer abort()
	go func() {
		for n := 1; ; n++ {
			select {
			case <-sigs:
			case <-drainCtx.Done():
				return
			}
			if n == 1 {
				stopSweep()
			} else {
				abort()
				return
			}
		}
	}()
	if err := syncTriggers(ctx, e); err != nil {
		return err
	}
	if !g.json {
		fmt.Fprintf(g.stderr, "%s: driving due runs every %s and dispatching triggers; Ctrl-C to stop\n", name, n.poll)
	}
	leading := make(chan error, 1)
	go func() { leading <- e.rt.Lead(sweepCtx) }()
	triggersDone := make(chan error, 1)
	go func() { triggersDone <- e.rt.RunTriggers(sweepCtx) }()
	err := e.rt.Sweep(sweepCtx, n.poll)
	stopSweep()
	if terr := <-triggersDone; err == nil {
		err = terr
	}
	if lerr := <-leading; err == nil { // resigned: another node leads at its next attempt
		err = lerr
	}
	if err != nil {
		return err
	}
	if stopping != nil {
		stopping()
	}
	if !g.json {
		fmt.Fprintf(g.stderr, "%s: draining for at most %s; a second Ctrl-C abandons what still runs\n", name, n.drain)
	}
	t := time.AfterFunc(n.drain, abort)
	defer t.Stop()
	if err := e.rt.Close(drainCtx); err != nil {
		return err
	}
	if !g.json {
		fmt.Fprintf(g.stderr, "%s: drained; every lease given back\n", name)
	}
	return nil
}

// leader says who leads: a JSON line on the printer's output, or a line
// for people on w.
func (p *printer) leader(w io.Writer, name, node, leader string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.json {
		b, _ := json.Marshal(struct {
			Node    string `json:"node"`
			Leader  string `json:"leader"`
			Leading bool   `json:"leading"`
		}{node, leader, leader == node})
		fmt.Fprintf(p.w, "%s\n", b)
		return
	}
	switch leader {
	case node:
		fmt.Fprintf(w, "%s: this node (%s) leads\n", name, node)
	case "":
		fmt.Fprintf(w, "%s: no leader known\n", name)
	default:
		fmt.Fprintf(w, "%s: %s leads; this node follows\n", name, leader)
	}
}

func newRecover(g *globals) *cobra.Command {
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "recover",
		Short: "Drive every due run once to its end or its next wait, then exit",
		Long: "Claim the runs that are due — queued, or whose runner's lease expired (a crashed process) — and drive\n" +
			"each until it ends or parks. With --wait, keep looking for that long for leases that are about to expire.",
		Args: args(0, "no arguments"),
		RunE: withRuntime(g, func(ctx context.Context, e *env, _ []string) error {
			deadline := time.Now().Add(wait)
			total := 0
			for {
				n, err := e.rt.RecoverAll(ctx)
				if err != nil {
					return err
				}
				total += n
				if n == 0 && !time.Now().Before(deadline) {
					break
				}
				if n == 0 {
					select {
					case <-ctx.Done():
						return ctx.Err()
					case <-time.After(200 * time.Millisecond):
					}
				}
			}
			if err := e.rt.Wait(ctx); err != nil {
				return err
			}
			if !g.json {
				fmt.Fprintf(g.stderr, "recovered %d run(s)\n", total)
			}
			var runs []hitch.Run
			for _, id := range e.out.driven() {
				r, err := e.rt.Get(ctx, id)
				if err != nil {
					return err
				}
				e.out.summary(r)
				runs = append(runs, r)
			}
			return exitForAll(runs)
		}),
	}
	cmd.Flags().DurationVar(&wait, "wait", 0, "keep looking for due runs this long (leases last 30s)")
	maxRunnersFlag(cmd, g)
	return cmd
}

// maxRunnersFlag adds --max-runners to a command that drives runs: it wins
// over the config's worker.max_runners.
func maxRunnersFlag(cmd *cobra.Command, g *globals) {
	cmd.Flags().IntVar(&g.maxRunners, "max-runners", 0,
		fmt.Sprintf("runs this node keeps in flight (default: the config's worker.max_runners, else %d; 1–%d)", hitch.DefaultMaxRunners, hitch.MaxMaxRunners))
}

// maxRunners is the runs in flight a node is given: --max-runners, else
// the config's worker.max_runners, else 0 (the runtime's default).
func maxRunners(g *globals, cfg *config.Config) (int, error) {
	if g.maxRunners != 0 {
		if g.maxRunners < 1 || g.maxRunners > hitch.MaxMaxRunners {
			return 0, usageError{fmt.Errorf("--max-runners %d: want 1 to %d", g.maxRunners, hitch.MaxMaxRunners)}
		}
		return g.maxRunners, nil
	}
	return cfg.File.MaxRunners(), nil
}
