package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch/chaos"
)

func newChaos(g *globals) *cobra.Command {
	var p chaos.Params
	var node chaos.NodeParams
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: "Prove the promises on this deployment: a seeded workload whose workers are killed, paused and cut off, then verified",
		Long: "Run a seeded, bounded chaos workload against the configured store, in a scratch namespace of its own (a\n" +
			"SQLite file NAME.db beside the store, or a PostgreSQL schema NAME), dropped afterwards unless --keep.\n" +
			"--runs runs of an agent whose tool appends a line to a file are driven by --workers worker processes of\n" +
			"this binary; --kills faults hit them at random (SIGKILL, SIGSTOP past a lease then SIGCONT, and with\n" +
			"--cuts on PostgreSQL every connection terminated). Then uncertain calls are reconciled from the file,\n" +
			"every run is let end, and the journals and the file are checked: duplicate effects, effects without a\n" +
			"journaled start, lost runs, journal gaps, runs stuck without a live lease, more than one ending.\n" +
			"Exit 0 when every promise held, 9 on a violation (re-run the same schedule with --seed).",
		Args: args(0, "no arguments"),
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			if node.Store != "" {
				return nil
			}
			if !cmd.Flags().Changed("lease-ttl") {
				p.LeaseTTL = chaos.DefaultLeaseTTL
			} else {
				p.LeaseTTL = g.leaseTTL
			}
			if p.Runs == 0 || p.Workers == 0 || p.Duration == 0 {
				return usageError{errors.New("--runs, --workers and --duration: want more than 0")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if node.Store != "" { // one worker of a workload
				ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
				defer stop()
				node.LeaseTTL, node.Out = g.leaseTTL, g.stdout
				return chaos.ServeNode(ctx, node)
			}
			store, err := storePath(g)
			if err != nil {
				return err
			}
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			p.Store, p.Command = store, []string{exe, "chaos"}
			if err := p.Check(); err != nil {
				return usageError{err}
			}
			if !g.json {
				p.Log = g.stderr
			}
			res, err := chaos.Run(cmd.Context(), p)
			if err != nil {
				if errors.Is(err, chaos.ErrRealNamespace) || errors.Is(err, chaos.ErrNamespaceExists) {
					return withCode(exitRefused, err)
				}
				return err
			}
			printChaos(g, res)
			if !res.Report.OK() {
				return withCode(exitViolation, fmt.Errorf("chaos: %d violation(s); the same schedule again: --seed %d", violations(res.Report), res.Seed))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&p.Runs, "runs", chaos.DefaultRuns, "runs to start")
	f.IntVar(&p.Kills, "kills", chaos.DefaultKills, "faults to inject: SIGKILL, SIGSTOP past a lease, connection cuts with --cuts")
	f.IntVar(&p.Workers, "workers", chaos.DefaultWorkers, "worker processes driving the runs")
	f.DurationVar(&p.Duration, "duration", chaos.DefaultDuration, "bound on the whole workload, drain included")
	f.Uint64Var(&p.Seed, "seed", 0, "the schedule's seed (0: a new one, printed)")
	f.StringVar(&p.Namespace, "namespace", "", "scratch namespace: SQLite file NAME.db beside the store, or PostgreSQL schema NAME (default hitch_chaos_<random>); it must not exist")
	f.BoolVar(&p.Keep, "keep", false, "keep the scratch namespace and the effects file")
	f.BoolVar(&p.Cuts, "cuts", false, "on PostgreSQL, also terminate the workers' connections (pg_terminate_backend, where the role may)")
	f.StringVar(&node.Store, "node-store", "", "serve as one worker of a workload on this scratch store")
	f.StringVar(&node.Effects, "node-effects", "", "the worker's effects file")
	f.StringVar(&node.Name, "node-name", "", "the worker's name")
	f.DurationVar(&node.Poll, "node-poll", time.Second, "how often the worker looks for due runs")
	for _, n := range []string{"node-store", "node-effects", "node-name", "node-poll"} {
		_ = f.MarkHidden(n)
	}
	return cmd
}

func violations(r chaos.Report) int {
	n := 0
	for _, c := range r.Counts {
		n += c
	}
	return n
}

// printChaos prints a workload's result: one JSON object, or lines.
func printChaos(g *globals, res chaos.Result) {
	if g.json {
		b, _ := json.Marshal(res)
		fmt.Fprintf(g.jsonOut, "%s\n", b)
		return
	}
	w := g.stdout
	r := res.Report
	fmt.Fprintf(w, "chaos: seed %d, %s, scratch namespace %s\n", res.Seed, res.Driver, res.Namespace)
	fmt.Fprintf(w, "faults: %d SIGKILL, %d SIGSTOP, %d connection cuts (%d connections)", res.Kills, res.Pauses, res.Cuts, res.CutBackends)
	if res.CutsRefused != "" {
		fmt.Fprintf(w, "; cuts given up: %s", res.CutsRefused)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "runs: %d on %d workers: %d completed, %d ended otherwise; %d effects, %d uncertain calls, %d reconciled\n",
		r.Runs, res.Workers, r.Completed, r.Ended, r.Effects, r.Uncertain, res.Reconciled)
	fmt.Fprintf(w, "drained %s after the last fault; %s in all\n", res.Drain.Round(time.Millisecond), res.Elapsed.Round(time.Millisecond))
	for _, k := range []string{chaos.DuplicateEffect, chaos.UnjournaledEffect, chaos.LostRun, chaos.JournalGap, chaos.StuckRun, chaos.ExtraEnding} {
		fmt.Fprintf(w, "%-19s %d\n", k, r.Counts[k])
	}
	for _, v := range r.Violations {
		fmt.Fprintf(w, "VIOLATION %s\n", v)
	}
	if len(res.Kept) > 0 {
		fmt.Fprintf(w, "kept: %s and %s\n", res.Kept[0], res.Kept[1])
	}
	if r.OK() {
		fmt.Fprintln(w, "every promise held")
	}
}
