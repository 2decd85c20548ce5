package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"
)

func newWorkspace(g *globals) *cobra.Command {
	list := leaf{"list RUN", "List the roots granted to a run (besides its workspace)", args(1, "one RUN id"), needRuntime, shows(backend.Roots, printRoots)}.build(g)
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
	return group("workspace", "List, grant and revoke a run's extra workspace roots", list, change(false), change(true))
}

// printRoots prints the roots granted to a run, a line each (--json: one
// array).
func printRoots(v *verb, roots []string) {
	if v.g.json {
		if roots == nil {
			roots = []string{}
		}
		v.printJSON(roots)
		return
	}
	if len(roots) == 0 {
		fmt.Fprintln(v.g.stdout, "no roots granted beyond the workspace")
	}
	for _, r := range roots {
		fmt.Fprintln(v.g.stdout, r)
	}
}
