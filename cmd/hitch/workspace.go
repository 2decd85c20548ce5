package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/sandbox"
)

func newWorkspace(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "workspace", Short: "List, grant and revoke a run's extra workspace roots"}
	list := &cobra.Command{
		Use:   "list RUN",
		Short: "List the roots granted to a run (besides its workspace)",
		Args:  args(1, "one RUN id"),
		RunE: withRuntime(g, func(ctx context.Context, e *env, a []string) error {
			roots, err := e.rt.Roots(ctx, a[0])
			if err != nil {
				return notFound(err)
			}
			if g.json {
				if roots == nil {
					roots = []string{}
				}
				b, _ := json.Marshal(roots)
				fmt.Fprintf(g.stdout, "%s\n", b)
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
			RunE: withRuntime(g, func(ctx context.Context, e *env, a []string) error {
				var err error
				if revoke {
					err = e.rt.RevokeRoot(ctx, a[0], a[1], by)
				} else {
					err = e.rt.GrantRoot(ctx, a[0], a[1], by)
				}
				switch {
				case err == nil:
				case errors.Is(err, hitch.ErrNoWorkspace), errors.Is(err, sandbox.ErrNotGranted), isRefusal(err):
					return withCode(exitRefused, err)
				default:
					return notFound(err)
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
		c.Flags().StringVar(&by, "by", "cli", "who changes it, recorded in the journal")
		return c
	}
	cmd.AddCommand(list, change(false), change(true))
	return cmd
}
