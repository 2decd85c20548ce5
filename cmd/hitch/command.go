package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// The shapes most commands share, written once: a group that only holds
// commands, a command whose body acts through a backend, the bodies that
// read one thing and print it or act on a run and follow it, and the
// printer of a list.

// group is a command that only holds others.
func group(use, short string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short}
	cmd.AddCommand(subs...)
	return cmd
}

// body is what a command runs on its backend with its positional arguments.
type body func(ctx context.Context, v *verb, a []string) error

// leaf declares a command that acts through a backend: its words, its
// positional arguments, what it needs of a local backend, and its body.
// A command with flags, a long text or checks adds them to what build
// returns.
type leaf struct {
	use, short string
	args       cobra.PositionalArgs
	need       need
	run        body
}

func (l leaf) build(g *globals) *cobra.Command {
	return &cobra.Command{Use: l.use, Short: l.short, Args: l.args, RunE: withBackend(g, l.need, l.run)}
}

// leaves builds a table of leaves.
func leaves(g *globals, ls ...leaf) []*cobra.Command {
	cmds := make([]*cobra.Command, len(ls))
	for i, l := range ls {
		cmds[i] = l.build(g)
	}
	return cmds
}

// shows is the body that reads one thing by the first argument and prints
// it.
func shows[T any](get func(backend, context.Context, string) (T, error), print func(*verb, T)) body {
	return func(ctx context.Context, v *verb, a []string) error {
		x, err := get(v.b, ctx, a[0])
		if err != nil {
			return err
		}
		print(v, x)
		return nil
	}
}

// moveOn carries out act on the run id, then follows the run from where
// it stood before to its end or its next park, and turns where it stands
// into the exit code.
func (v *verb) moveOn(ctx context.Context, id string, act func() error) error {
	before, err := v.follow(ctx, id)
	if err != nil {
		return err
	}
	if err := act(); err != nil {
		return err
	}
	return v.settle(ctx, id, before.Position)
}

// printList prints a list: with --json a line per item as toJSON shapes
// it, else a table under header (cells apart by tabs) with a row per item.
func printList[T any](v *verb, list []T, toJSON func(T) any, header string, row func(T) string) error {
	if v.g.json {
		for _, x := range list {
			v.printJSON(toJSON(x))
		}
		return nil
	}
	tw := tabwriter.NewWriter(v.g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, x := range list {
		fmt.Fprintln(tw, row(x))
	}
	return tw.Flush()
}

// page is a list command's paging: --after goes on after a cursor or an
// id, --limit bounds the page and, in a list across tenants, --tenant
// keeps one tenant's.
type page struct {
	after, tenant string
	limit         int
}

// flags adds the paging flags to list: after says what --after takes, def
// is --limit's default, and tenants (empty: no --tenant) names what
// --tenant keeps.
func (p *page) flags(list *cobra.Command, after string, def int, tenants string) {
	f := list.Flags()
	f.StringVar(&p.after, "after", "", after)
	f.IntVar(&p.limit, "limit", def, fmt.Sprintf("at most this many (1 to %d)", maxListLimit))
	if tenants != "" {
		f.StringVar(&p.tenant, "tenant", "", "only this tenant's "+tenants+" (default: every tenant)")
	}
}

// check refuses a limit outside 1–maxListLimit and a tenant's name that
// is not one.
func (p *page) check() error {
	if p.tenant != "" {
		if err := checkTenant("--tenant", p.tenant); err != nil {
			return err
		}
	}
	if p.limit < 1 || p.limit > maxListLimit {
		return usageError{fmt.Errorf("--limit %d: want 1–%d", p.limit, maxListLimit)}
	}
	return nil
}

// asIs is the JSON of an item that is its own JSON.
func asIs[T any](x T) any { return x }
