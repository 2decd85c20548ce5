package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch/store/postgres"
	"github.com/hitch-dev/hitch/store/sqlite"
)

func newMigrate(g *globals) *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Bring the store's schema up to this build's version (--dry-run: list what would be applied)",
		Long: "Bring the store's schema up to the version this build of hitch knows. A PostgreSQL schema is migrated in\n" +
			"one transaction under a lock, so several nodes may run this at once; nodes refuse a schema newer than\n" +
			"they know. Commands that start or drive runs migrate by themselves; read commands never do.\n" +
			"A SQLite file is migrated whenever a command that may write opens it.",
		Args: args(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			loc, err := storePath(g)
			if err != nil {
				return err
			}
			if !isPostgres(loc) {
				if dryRun {
					fmt.Fprintf(g.stdout, "%s: a SQLite file is migrated when a command that may write opens it; nothing is applied now\n", printable(loc))
					return nil
				}
				st, err := sqlite.Open(ctx, loc)
				if err != nil {
					return err
				}
				if err := st.Close(); err != nil {
					return err
				}
				fmt.Fprintf(g.stdout, "%s: up to date\n", printable(loc))
				return nil
			}
			conn, opts, err := postgresOptions(loc, true)
			if err != nil {
				return err
			}
			ms, err := postgres.Migrate(ctx, conn, dryRun, opts...)
			if err != nil {
				return err
			}
			if g.json {
				type row struct {
					Version int    `json:"version"`
					Name    string `json:"name"`
				}
				rows := make([]row, 0, len(ms))
				for _, m := range ms {
					rows = append(rows, row{m.Version, m.Name})
				}
				b, _ := json.Marshal(map[string]any{"dry_run": dryRun, "migrations": rows})
				fmt.Fprintf(g.stdout, "%s\n", b)
				return nil
			}
			verb := "applied"
			if dryRun {
				verb = "would apply"
			}
			if len(ms) == 0 {
				fmt.Fprintln(g.stdout, "up to date: no migration to apply")
			}
			for _, m := range ms {
				fmt.Fprintf(g.stdout, "%s %03d %s\n", verb, m.Version, m.Name)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list the migrations that would be applied, writing nothing")
	return cmd
}
