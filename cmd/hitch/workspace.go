package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"
)

func newWorkspace(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "workspace", Short: "List, grant and revoke a run's extra workspace roots"}
	list := &cobra.Command{
		Use:   "list RUN",
		Short: "List the roots granted to a run (besides its workspace)",
		Args:  args(1, "one RUN id"),
		RunE: withBackend(g, needRuntime, func(ctx context.Context, v *verb, a []string) error {
			roots, err := v.b.Roots(ctx, a[0])
			if err != nil {
				return err
			}
			if g.json {
				if roots == nil {
					roots = []string{}
				}
				v.printJSON(roots)
				return nil
			}
			if len(roots) == 0 {
				fmt.Fprintln(g.stdout, "no roots granted beyond the workspace")
			}
			for _, r := range roots {
				fmt.Fprintln(g.stdout, r)
			}
			return nil
		}),
	}
	change := func(revoke bool) *cobra.Command {
		use, short := "grant RUN PATH", "Let a run's tools use another directory (journaled)"
		if revoke {
			use, short = "revoke RUN PATH", "Take a granted directory back from a run (journaled)"
		}
		var by string
		c := &cobra.Command{
			Use: use, Short: short, Args: args(2, "RUN and PATH"),
			PreRunE: func(_ *cobra.Command, a []string) error {
				if revoke {
					if !filepath.IsAbs(a[1]) {
						return usageError{fmt.Errorf("PATH %s: want the absolute path that was granted", printable(a[1]))}
					}
					return nil
				}
				return checkDir(a[1])
			},
			RunE: withBackend(g, needRuntime, func(ctx context.Context, v *verb, a []string) error {
				var err error
				if revoke {
					err = v.b.Revoke(ctx, a[0], a[1], by)
				} else {
					err = v.b.Grant(ctx, a[0], a[1], by)
				}
				if err != nil {
					return err
				}
				if !g.json {
					verb := "granted to"
					if revoke {
						verb = "revoked from"
					}
					fmt.Fprintf(g.stdout, "%s %s %s\n", a[1], verb, a[0])
				}
				return nil
			}),
		}
		c.Flags().StringVar(&by, "by", "cli", "who changes it, recorded in the journal (with --server, the token's name)")
		return c
	}
	cmd.AddCommand(list, change(false), change(true))
	return cmd
}
