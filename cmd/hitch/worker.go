package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

func newWorker(g *globals) *cobra.Command {
	var poll time.Duration
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Drive due runs until interrupted: queued runs, expired leases, due wakes",
		Args:  args(0, "no arguments"),
		RunE: withRuntime(g, func(ctx context.Context, e *env, _ []string) error {
			if !g.json {
				fmt.Fprintf(g.stderr, "worker: driving due runs every %s; Ctrl-C to stop\n", poll)
			}
			return e.rt.Sweep(ctx, poll)
		}),
	}
	cmd.Flags().DurationVar(&poll, "poll", time.Second, "how often to look for due runs")
	return cmd
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
				n, err := e.rt.Recover(ctx)
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
			return nil
		}),
	}
	cmd.Flags().DurationVar(&wait, "wait", 0, "keep looking for due runs this long (leases last 30s)")
	return cmd
}
