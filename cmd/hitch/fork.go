package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/model"
)

// workspaceWarning is said before every fork: files are not in the journal.
const workspaceWarning = "warning: the fork works on the workspace as it is NOW, not as it was at the fork position: files are not in the journal"

func newRunsFork(g *globals) *cobra.Command {
	var o hitch.ForkOptions
	var at int64
	var reply string
	cmd := &cobra.Command{
		Use:   "fork RUN --at POS",
		Short: "Fork a run at a journal position and follow the new run",
		Long: "Create a new run whose history is RUN's journal up to position POS (runs events numbers them; 1 keeps only\n" +
			"the start), and follow it. Results recorded before POS are never run again; a call started and not settled\n" +
			"at POS is an uncertain effect in the fork, as after a crash. From POS on the fork may use another version of\n" +
			"the agent (--version), another model (--model), other instructions, a rewritten model reply at POS (--reply),\n" +
			"or an extra message.\n" +
			"The fork is a run of its own: its own id, family and budget. It works on the workspace as it is now.",
		Args: args(1, "one RUN id"),
		PreRunE: func(cmd *cobra.Command, a []string) error {
			if !cmd.Flags().Changed("at") || at < 1 {
				return usageError{fmt.Errorf("--at %d: want the journal position to fork at, 1 or more", at)}
			}
			if o.Version < 0 {
				return usageError{fmt.Errorf("--version %d: want a version of the run's agent, or 0 for its own", o.Version)}
			}
			if cmd.Flags().Changed("id") {
				return checkID("--id", o.ID)
			}
			return nil
		},
		RunE: withBackend(g, needRuntime, func(ctx context.Context, v *verb, a []string) error {
			if o.ID == "" {
				o.ID = hitch.NewRunID()
			}
			if reply != "" {
				o.Reply = &model.Reply{Text: reply}
			}
			fmt.Fprintln(g.stderr, workspaceWarning)
			return v.startAndFollow(ctx, o.ID, o.Detached, func() (hitch.StartResult, error) { return v.b.Fork(ctx, a[0], at, o) },
				"run %s already exists and is not this fork; nothing was created",
				"fork %s was already made, the same way; following it\n")
		}),
	}
	cmd.Flags().Int64Var(&at, "at", 0, "the journal position to fork at: the fork keeps entries 1 to POS")
	cmd.Flags().StringVar(&o.ID, "id", "", "the fork's run id; forking again with it creates nothing")
	cmd.Flags().IntVar(&o.Version, "version", 0, "go on with this version of the run's agent (default: the run's own)")
	cmd.Flags().StringVar(&o.Instructions, "instructions", "", "instructions for the fork from POS on, in place of the run's")
	cmd.Flags().StringVar(&o.Model, "model", "", "go on from POS with this model (provider/model, the model of any agent of the config) in place of the agent's")
	cmd.Flags().StringVar(&reply, "reply", "", "rewrite the model reply at POS (it must be one) as this final text")
	cmd.Flags().StringVar(&o.Message, "message", "", "a user message the model sees after the history")
	cmd.Flags().BoolVar(&o.Detached, "detach", false, "queue the fork for a worker and return at once")
	return cmd
}
