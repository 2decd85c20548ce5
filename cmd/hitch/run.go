package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch"
)

func newRun(g *globals) *cobra.Command {
	var agent, id, instructions, tenant string
	var detach bool
	cmd := &cobra.Command{
		Use:   "run PROMPT",
		Short: "Start a run of an agent from the config and follow it to its end",
		Long: "Start a run of an agent declared in the config file on PROMPT, printing progress as each step is journaled.\n" +
			"With --id the start is idempotent: the same id again starts nothing. With --detach the run is queued for a\n" +
			"worker (hitch worker) and the command returns at once; with --server the server drives it.",
		Args: args(1, "one PROMPT argument (quote it)"),
		PreRunE: func(cmd *cobra.Command, a []string) error {
			if cmd.Flags().Changed("id") {
				if err := checkID("--id", id); err != nil {
					return err
				}
			}
			if cmd.Flags().Changed("tenant") {
				if err := checkTenant("--tenant", tenant); err != nil {
					return err
				}
			}
			g.deferIsolation = detach // this process runs none of the run's commands
			return checkPrompt(a[0])
		},
		RunE: withBackend(g, needNew, func(ctx context.Context, v *verb, a []string) error {
			if id == "" {
				id = hitch.NewRunID()
			}
			return v.startAndFollow(ctx, id, detach, func() (hitch.StartResult, error) {
				return v.b.Start(ctx, startParams{Agent: agent, Input: a[0], ID: id, Tenant: tenant, Instructions: instructions, Detach: detach})
			}, "run %s already exists with a different input; nothing was started",
				"run %s was already started, with the same input; following it\n")
		}),
	}
	cmd.Flags().StringVar(&agent, "agent", "", "agent to run (default: the only one in the config)")
	cmd.Flags().StringVar(&id, "id", "", "run id; starting an existing id starts nothing")
	cmd.Flags().BoolVar(&detach, "detach", false, "queue the run for a worker and return at once")
	cmd.Flags().StringVar(&instructions, "instructions", "", "instructions for this run, laid over the agent's")
	cmd.Flags().StringVar(&tenant, "tenant", "", "tenant the run belongs to (default: \"default\")")
	return cmd
}

// startAndFollow starts the run id with start (a start or a fork) and
// follows it to its end, or prints it and returns when detached. An id
// started before starts nothing: the run is followed from where it stands
// when it was started the same way (again says so), and refused when not
// (refused says so); each names the run with %s.
func (v *verb) startAndFollow(ctx context.Context, id string, detach bool, start func() (hitch.StartResult, error), refused, again string) error {
	if !detach {
		v.out.following(id) // its steps print from the first
	}
	res, err := start()
	if err != nil {
		return err
	}
	v.out.started(res)
	after := int64(0)
	if !res.Created {
		if !res.SameInput {
			v.out.outcome(res.Run)
			return withCode(exitRefused, fmt.Errorf(refused, res.Run.ID))
		}
		if !v.g.json {
			fmt.Fprintf(v.g.stderr, again, res.Run.ID)
		}
		after = res.Run.Position
	}
	if detach {
		v.out.outcome(res.Run)
		return nil
	}
	return v.settle(ctx, res.Run.ID, after)
}

func newCancel(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel RUN",
		Short: "Cancel a run (durably; cancelling twice is harmless)",
		Args:  args(1, "one RUN id"),
		RunE: withBackend(g, needRuntime, func(ctx context.Context, v *verb, a []string) error {
			run, err := v.b.Cancel(ctx, a[0])
			if err != nil {
				return err
			}
			v.out.outcome(run)
			if !run.Status.Terminal() {
				return withCode(exitRefused, fmt.Errorf("cancel of %s is recorded; its runner has not settled yet (status %s)", run.ID, run.Status))
			}
			return nil
		}),
	}
}

func newReconcile(g *globals) *cobra.Command {
	var output, by string
	var unconfirmed bool
	cmd := &cobra.Command{
		Use:   "reconcile RUN CALL",
		Short: "Settle an uncertain tool call and let the run go on",
		Long: "Settle a call whose effect is unknown (its process stopped mid-call, or it timed out): give its real result\n" +
			"with --output, or --unconfirmed when it cannot be established. The model sees what you give; the run then\n" +
			"goes on and this command follows it.",
		Args: args(2, "RUN and CALL (see hitch runs show RUN)"),
		PreRunE: func(*cobra.Command, []string) error {
			if (output == "") == !unconfirmed {
				return usageError{fmt.Errorf("give exactly one of --output TEXT or --unconfirmed")}
			}
			return nil
		},
		RunE: withBackend(g, needRuntime, func(ctx context.Context, v *verb, a []string) error {
			return v.moveOn(ctx, a[0], func() error {
				return v.b.Reconcile(ctx, a[0], hitch.Reconciliation{Call: a[1], Output: output, Unconfirmed: unconfirmed, By: by})
			})
		}),
	}
	cmd.Flags().StringVar(&output, "output", "", "the call's confirmed result, shown to the model")
	cmd.Flags().BoolVar(&unconfirmed, "unconfirmed", false, "the outcome cannot be established; tell the model so")
	cmd.Flags().StringVar(&by, "by", "cli", "who reconciles, recorded in the journal")
	return cmd
}

// warnMissingKey says, before a run starts, when its model's API key
// variable is not set: its calls would be refused as unauthorized.
func warnMissingKey(e *env, agent string) {
	for _, a := range e.cfg.File.Agents {
		if a.Name != agent {
			continue
		}
		if env := e.cfg.File.Models[a.Model].KeyEnv(); env != "" && vault.getenv(env) == "" {
			fmt.Fprintf(e.g.stderr, "hitch: warning: %s is not set; model %q will refuse the calls of agent %s\n", env, a.Model, agent)
		}
	}
}
