package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/bench"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/sqlite"
)

func newBench(g *globals) *cobra.Command {
	var runs, steps, maxRunners, nodes, parked, recoverN, wake, clients, secrets, stepConcurrency int
	var wakeHere, twoRequests bool
	var db, syncMode, tracing, cpuProfile string
	var latency, jitter, poll, lease time.Duration
	var node bench.NodeParams
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure durable steps per second with the scripted model on SQLite",
		Long: "Run R concurrent runs of S steps each (a step: a scripted model reply asking for add(a, b), the tool call,\n" +
			"its result journaled) on a fresh SQLite file, check that every run completed, and print one line:\n" +
			"RESULT peer=hitch mode=sqlite-<sync> runs=R steps=S total_steps=R*S run_s=.. steps_per_s=.. entries=..\n" +
			"commits_per_step=.. allocs_per_step=.. cpu_us_per_step=.. (journal commits, heap allocations and process CPU a step).\n" +
			"With --model-latency, every model call takes that long (give or take --jitter), and the line adds what the\n" +
			"runtime added to a step beyond it (from a reply, or the start, to the run's next model request: p50, p99,\n" +
			"max) and the process's peak RSS, heap and goroutines.\n\n" +
			"With --nodes N, the runs are driven by N worker processes of this binary sharing one store (a fresh SQLite\n" +
			"file, or a fresh schema of the PostgreSQL database in $HITCH_DATABASE_URL, dropped at the end): once every\n" +
			"node is up, the R runs are started detached, and the line says how many runs each node ended.\n\n" +
			"With --recover N, N runs are brought into flight on one worker process of this binary (each waiting on its\n" +
			"model), the process is killed with SIGKILL, and once its leases (--lease) ran out one runtime recovers them:\n" +
			"the line says when every run was claimed again, when every run had sent its model request again, and when\n" +
			"every run had completed, timed from the recovery's start.",
		Args: args(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if node.Store == "" { // a node of --nodes takes what its parent passes
				if err := benchFlagsRead(cmd); err != nil {
					return err
				}
			}
			var s sqlite.Sync
			switch strings.ToUpper(syncMode) {
			case "FULL":
				s = sqlite.SyncFull
			case "NORMAL":
				s = sqlite.SyncNormal
			default:
				return usageError{fmt.Errorf("--sync %q: want FULL or NORMAL", syncMode)}
			}
			if cmd.Flags().Changed("parked") {
				return benchParked(cmd, g, parked, db, s)
			}
			if runs < 1 || runs > 100000 || steps < 1 || steps > 100000 {
				return usageError{fmt.Errorf("--runs and --steps: want 1–100000 each")}
			}
			if latency < 0 || latency > time.Hour || jitter < 0 || jitter > latency {
				return usageError{fmt.Errorf("--model-latency %s, --jitter %s: want a latency of 0 to 1h and a jitter of 0 to the latency", latency, jitter)}
			}
			if maxRunners < 0 || maxRunners > hitch.MaxMaxRunners {
				return usageError{fmt.Errorf("--max-runners %d: want 1 to %d (0: as many as --runs)", maxRunners, hitch.MaxMaxRunners)}
			}
			if stepConcurrency < 0 || stepConcurrency > hitch.MaxMaxRunners {
				return usageError{fmt.Errorf("--step-concurrency %d: want 1 to %d (0: the default)", stepConcurrency, hitch.MaxMaxRunners)}
			}
			if cmd.Flags().Changed("wake") {
				return benchWake(cmd, g, wake, steps, db, s, poll, wakeHere)
			}
			if cpuProfile != "" {
				stop, err := startCPUProfile(cpuProfile)
				if err != nil {
					return err
				}
				defer stop()
			}
			if cmd.Flags().Changed("clients") {
				return benchAPI(cmd, g, bench.APIParams{Clients: clients, Runs: runs, Steps: steps, TwoRequests: twoRequests, DB: db, Sync: s,
					StepConcurrency: stepConcurrency})
			}
			if node.Store != "" { // one node of a --nodes measurement
				node.Sync, node.Steps, node.ModelLatency, node.ModelJitter, node.MaxRunners = s, steps, latency, jitter, maxRunners
				node.Poll, node.In, node.Out = poll, cmd.InOrStdin(), g.stdout
				return bench.ServeNode(cmd.Context(), node)
			}
			if recoverN != 0 && (recoverN < 1 || recoverN > hitch.MaxMaxRunners) {
				return usageError{fmt.Errorf("--recover %d: want 1 to %d", recoverN, hitch.MaxMaxRunners)}
			}
			if lease < time.Second || lease > time.Hour {
				return usageError{fmt.Errorf("--lease %s: want 1s to 1h", lease)}
			}
			if nodes < 0 || nodes > 64 {
				return usageError{fmt.Errorf("--nodes %d: want 1 to 64", nodes)}
			}
			db, remove, err := benchFile(db, "bench.db", false)
			if err != nil {
				return err
			}
			defer remove()
			if secrets < 0 || secrets > bench.MaxSecrets {
				return usageError{fmt.Errorf("--secrets %d: want 0 to %d", secrets, bench.MaxSecrets)}
			}
			p := bench.Params{Runs: runs, Steps: steps, DB: db, Sync: s, Tracing: bench.Tracing(tracing),
				ModelLatency: latency, ModelJitter: jitter, MaxRunners: maxRunners, Secrets: secrets,
				StepConcurrency: stepConcurrency}
			if recoverN > 0 {
				command, err := benchCommand()
				if err != nil {
					return err
				}
				p.Runs = recoverN
				return g.measured(bench.RunRecover(cmd.Context(), bench.RecoverParams{Params: p, Command: command, LeaseTTL: lease}))
			}
			if nodes > 0 {
				command, err := benchCommand()
				if err != nil {
					return err
				}
				np := bench.NodesParams{Params: p, Nodes: nodes, Postgres: os.Getenv(databaseURLEnv), Command: command, Poll: poll}
				if poll == 0 {
					// PostgreSQL notifies the nodes of new runs; SQLite
					// does not, so its nodes share a backlog only when each
					// looks as often as a busy one claims.
					np.Poll = hitch.DefaultSweepInterval
					if np.Postgres == "" {
						np.Poll = hitch.DefaultClaimCooldown
					}
				}
				return g.measured(bench.RunNodes(cmd.Context(), np))
			}
			switch p.Tracing {
			case bench.TracingOff, bench.TracingNoExport:
			case bench.TracingOTLP:
				c, err := bench.StartCollector()
				if err != nil {
					return err
				}
				defer c.Close()
				p.OTLPEndpoint = c.URL()
				defer func() {
					n, b := c.Received()
					fmt.Fprintf(g.stderr, "collector stand-in received %d exports, %d bytes\n", n, b)
				}()
			default:
				return usageError{fmt.Errorf("--tracing %q: want off, noexport or otlp", tracing)}
			}
			return g.measured(bench.Run(cmd.Context(), p))
		},
	}
	cmd.Flags().IntVar(&runs, "runs", 64, "concurrent runs (R)")
	cmd.Flags().IntVar(&steps, "steps", 10, "steps per run (S)")
	cmd.Flags().StringVar(&db, "db", "", "SQLite file to create (default: a temporary one)")
	cmd.Flags().StringVar(&tracing, "tracing", "off", "off, noexport (telemetry with no exporter: it draws nothing) or otlp (exported to a collector stand-in on loopback)")
	cmd.Flags().StringVar(&syncMode, "sync", "FULL", "SQLite synchronous setting: FULL (power-loss safe) or NORMAL")
	cmd.Flags().DurationVar(&latency, "model-latency", 0, "every model call takes this long, as a production model's would (0: it answers at once)")
	cmd.Flags().DurationVar(&jitter, "jitter", 0, "model calls take --model-latency give or take up to this, drawn uniformly")
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the measured runs to this file (go tool pprof reads it); the default measurement or --clients")
	cmd.Flags().IntVar(&maxRunners, "max-runners", 0, "runs in flight (0: as many as --runs; with --nodes, each node's default)")
	cmd.Flags().IntVar(&stepConcurrency, "step-concurrency", 0, fmt.Sprintf("runs doing a step's CPU work at once (0: the default, %d × GOMAXPROCS)", hitch.DefaultStepsPerCore))
	cmd.Flags().IntVar(&nodes, "nodes", 0, "drive the runs with this many worker processes sharing one store (SQLite, or $HITCH_DATABASE_URL)")
	cmd.Flags().DurationVar(&poll, "poll", 0, "with --nodes: how often each node looks for due runs (default 1s on PostgreSQL, which notifies the nodes; 50ms on SQLite, which does not)")
	cmd.Flags().StringVar(&node.Store, "node-store", "", "serve as one node of a --nodes measurement on this store")
	cmd.Flags().StringVar(&node.Schema, "node-schema", "", "the PostgreSQL schema of --node-store")
	cmd.Flags().StringVar(&node.Name, "node-name", "", "the node's name in leases")
	cmd.Flags().DurationVar(&node.LeaseTTL, "node-lease", 0, "the node's lease")
	cmd.Flags().IntVar(&node.InFlight, "node-in-flight", 0, "print IN_FLIGHT once the node's model has had this many requests")
	cmd.Flags().IntVar(&recoverN, "recover", 0, "measure the recovery of N runs whose worker process was killed mid model call")
	cmd.Flags().DurationVar(&lease, "lease", 2*time.Second, "with --recover: the killed worker's lease, waited out before the recovery")
	cmd.Flags().BoolVar(&node.Firsts, "node-firsts", false, "print when each run makes its first model request")
	cmd.Flags().IntVar(&wake, "wake", 0, "measure wake latency: start N runs one at a time here and time each to its first model request\n"+
		"on a worker process of this binary sharing the store ($"+databaseURLEnv+", else a SQLite file); --poll is the worker's (default 1s)")
	cmd.Flags().BoolVar(&wakeHere, "wake-here", false, "with --wake: drive the runs with a sweeper in this process, not a worker process")
	cmd.Flags().IntVar(&secrets, "secrets", 0, "declare this many secret values that the workload never sends (what redaction costs a step)")
	cmd.Flags().IntVar(&clients, "clients", 0, "measure the HTTP API: this many clients on loopback each start runs and follow their event\n"+
		"streams to the end, --runs in all, on a SQLite store; one request a run starts it and answers with its stream")
	cmd.Flags().BoolVar(&twoRequests, "two-requests", false, "with --clients: start each run with one request and open its stream with a second")
	for _, f := range []string{"node-store", "node-schema", "node-name", "node-lease", "node-in-flight", "node-firsts"} {
		_ = cmd.Flags().MarkHidden(f)
	}
	cmd.Flags().IntVar(&parked, "parked", 0, "fill a store with N runs parked for an approval (through the library) and time the routes on it;\n"+
		"the store is --db (kept, and filled only up to N when measured again), else $"+databaseURLEnv+", else a temporary file")
	return cmd
}

// benchParked runs the parked workload (bench.Parked) and prints its lines.
func benchParked(cmd *cobra.Command, g *globals, n int, db string, s sqlite.Sync) error {
	if n < 200 || n > 10_000_000 {
		return usageError{fmt.Errorf("--parked %d: want 200–10000000 (the answers take 120 of them)", n)}
	}
	ctx := cmd.Context()
	var st store.Store
	switch url := os.Getenv(databaseURLEnv); {
	case db == "" && url != "":
		e, err := openStoreAt(ctx, g, url, true, false)
		if err != nil {
			return err
		}
		st = e.store
	default:
		db, remove, err := benchFile(db, "parked.db", true)
		if err != nil {
			return err
		}
		defer remove()
		if st, err = sqlite.Open(ctx, db, sqlite.WithSync(s)); err != nil {
			return err
		}
	}
	defer st.Close()
	res, err := bench.Parked(ctx, bench.ParkedParams{Runs: n, Store: st, Progress: g.stderr})
	if err != nil {
		return err
	}
	fmt.Fprint(g.stdout, res.Lines())
	return nil
}

// benchFile is the SQLite file a measurement stores in: db when given,
// else name in a new temporary folder that remove deletes. A given db that
// exists is refused unless reuse.
func benchFile(db, name string, reuse bool) (path string, remove func(), err error) {
	if db != "" {
		if _, err := os.Stat(db); err == nil && !reuse {
			return "", nil, usageError{fmt.Errorf("--db %s exists; the benchmark wants a fresh file", db)}
		}
		return db, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "hitch-bench-")
	if err != nil {
		return "", nil, err
	}
	return filepath.Join(dir, name), func() { os.RemoveAll(dir) }, nil
}

// benchCommand is the command of this binary that a measurement's worker
// processes run.
func benchCommand() ([]string, error) {
	exe, err := os.Executable()
	return []string{exe, "bench"}, err
}

// measured prints a measurement's result line, or returns its error.
func (g *globals) measured(res interface{ Line() string }, err error) error {
	if err != nil {
		return err
	}
	fmt.Fprintln(g.stdout, res.Line())
	return nil
}

// startCPUProfile profiles the process's CPU into a new file at path until
// the returned stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// benchReads is what each measurement of hitch bench reads of the flags,
// keyed by the flag that chooses it ("" for the default measurement). The
// --cpuprofile of a measurement that other processes drive, or that times
// routes, would say nothing, so those do not read it.
var benchReads = map[string][]string{
	"parked":  {"db", "sync"},
	"wake":    {"wake-here", "steps", "db", "sync", "poll"},
	"clients": {"two-requests", "runs", "steps", "db", "sync", "step-concurrency", "cpuprofile"},
	"recover": {"lease", "steps", "db", "sync", "model-latency", "jitter"},
	"nodes":   {"runs", "steps", "db", "sync", "model-latency", "jitter", "max-runners", "poll"},
	"":        {"runs", "steps", "db", "sync", "tracing", "model-latency", "jitter", "cpuprofile", "max-runners", "step-concurrency", "secrets"},
}

// benchFlagsRead refuses two measurements at once, and every flag set that
// the chosen measurement would not read, so that a command measures what
// it says.
func benchFlagsRead(cmd *cobra.Command) error {
	var chosen []string
	for _, m := range []string{"parked", "wake", "clients", "recover", "nodes"} {
		if cmd.Flags().Changed(m) {
			chosen = append(chosen, "--"+m)
		}
	}
	if len(chosen) > 1 {
		return usageError{fmt.Errorf("%s: choose one measurement", strings.Join(chosen, " and "))}
	}
	mode, name := "", "the default measurement"
	if len(chosen) == 1 {
		mode, name = chosen[0][2:], chosen[0]
	}
	var unread []string
	cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if f.Changed && f.Name != mode && !slices.Contains(benchReads[mode], f.Name) {
			unread = append(unread, "--"+f.Name)
		}
	})
	if len(unread) > 0 {
		return usageError{fmt.Errorf("%s: %s does not read them (it reads --%s)", strings.Join(unread, ", "), name, strings.Join(benchReads[mode], ", --"))}
	}
	return nil
}
