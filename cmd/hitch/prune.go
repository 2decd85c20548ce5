package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch"
)

func newPrune(g *globals) *cobra.Command {
	var olderThan time.Duration
	var dryRun bool
	var batch int
	cmd := &cobra.Command{
		Use:   "prune [--older-than D] [--dry-run]",
		Short: "Delete settled runs older than the retention",
		Long: "Delete every settled family — a root run and all runs below it, every one ended — whose last change is\n" +
			"older than --older-than by the store's clock, with their journals, in batches of one transaction each, and\n" +
			"the session idempotency keys whose window has passed. A family with a run that has not ended is kept whole,\n" +
			"and so are the runs of sessions. A pruned run is gone: runs show answers no such run (exit 6). With\n" +
			"--dry-run nothing is deleted and the families that would go are listed (at most one batch).\n" +
			"A leader node (hitch worker) prunes the same way by itself, every minute.",
		Args: args(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if olderThan <= 0 {
				return usageError{fmt.Errorf("--older-than %s: want more than 0", olderThan)}
			}
			if batch < 1 || batch > 1000 {
				return usageError{fmt.Errorf("--batch %d: want 1 to 1000", batch)}
			}
			ctx := cmd.Context()
			path, err := storePath(g)
			if err != nil {
				return err
			}
			if err := mustExist(path); err != nil {
				return err
			}
			e, err := openStoreAt(ctx, g, path, false, dryRun)
			if err != nil {
				return err
			}
			defer e.store.Close()
			rt, err := hitch.Open(hitch.Config{Store: e.store, PruneBatch: batch})
			if err != nil {
				return err
			}
			res, err := rt.Prune(ctx, hitch.PruneParams{OlderThan: olderThan, DryRun: dryRun})
			if err != nil {
				return err
			}
			if g.json {
				view := struct {
					DryRun bool      `json:"dry_run"`
					Before time.Time `json:"before"`
					Roots  []string  `json:"roots"`
					Runs   int64     `json:"runs"`
					Keys   int       `json:"keys"`
				}{dryRun, res.Before, res.Roots, res.Runs, res.Keys}
				if view.Roots == nil {
					view.Roots = []string{}
				}
				b, _ := json.Marshal(view)
				fmt.Fprintf(g.stdout, "%s\n", b)
				return nil
			}
			verb := "pruned"
			if dryRun {
				verb = "would prune"
			}
			fmt.Fprintf(g.stdout, "%s %d families (%d runs) settled before %s", verb, len(res.Roots), res.Runs, res.Before.Local().Format(time.DateTime))
			if !dryRun {
				fmt.Fprintf(g.stdout, ", and %d expired session keys", res.Keys)
			}
			fmt.Fprintln(g.stdout)
			if dryRun && len(res.Roots) > 0 {
				fmt.Fprintln(g.stdout, "  "+strings.Join(res.Roots, "\n  "))
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&olderThan, "older-than", hitch.DefaultRetention, "prune families settled longer ago than this")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "delete nothing; list what would be pruned")
	cmd.Flags().IntVar(&batch, "batch", hitch.DefaultPruneBatch, "families deleted per transaction (1–1000)")
	return cmd
}
