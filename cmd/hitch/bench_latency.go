package main

import (
	"cmp"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/bench"
	"github.com/hitch-dev/hitch/store/sqlite"
)

// benchWake runs the wake-latency measurement (bench.RunWake) and prints
// its line.
func benchWake(cmd *cobra.Command, g *globals, samples, steps int, db string, s sqlite.Sync, poll time.Duration, here bool) error {
	if samples < 1 || samples > 10000 {
		return usageError{fmt.Errorf("--wake %d: want 1–10000", samples)}
	}
	if steps < 1 || steps > 100 {
		return usageError{fmt.Errorf("--steps %d: with --wake, want 1–100", steps)}
	}
	command, err := benchCommand()
	if err != nil {
		return err
	}
	db, remove, err := benchFile(db, "wake.db", false)
	if err != nil {
		return err
	}
	defer remove()
	return g.measured(bench.RunWake(cmd.Context(), bench.WakeParams{Samples: samples, Steps: steps, Postgres: os.Getenv(databaseURLEnv),
		DB: db, Sync: s, Command: command, Poll: cmp.Or(poll, hitch.DefaultSweepInterval), Here: here}))
}

// benchAPI runs the HTTP API measurement (bench.RunAPI) and prints its
// line.
func benchAPI(cmd *cobra.Command, g *globals, p bench.APIParams) error {
	if p.Clients < 1 || p.Clients > 1024 {
		return usageError{fmt.Errorf("--clients %d: want 1–1024", p.Clients)}
	}
	if p.Runs < 1 || p.Runs > 100000 || p.Steps < 1 || p.Steps > 100 {
		return usageError{fmt.Errorf("--runs %d, --steps %d: with --clients, want 1–100000 runs of 1–100 steps", p.Runs, p.Steps)}
	}
	db, remove, err := benchFile(p.DB, "api.db", false)
	if err != nil {
		return err
	}
	defer remove()
	p.DB = db
	return g.measured(bench.RunAPI(cmd.Context(), p))
}
