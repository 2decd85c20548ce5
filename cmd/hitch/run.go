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
			"worker (hitch worker) and the command returns at once.",
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
			return checkPrompt(a[0])
		},
		RunE: withNewRuntime(g, func(ctx context.Context, e *env, a []string) error {
			ag, err := e.cfg.Agent(agent)
			if err != nil {
				return usageError{err}
			}
			warnMissingKey(g, e, ag.Name())
			if id == "" {
				id = hitch.NewRunID()
			}
			e.out.following(id)
			opts := []hitch.StartOption{hitch.WithID(id)}
			if detach {
				opts = append(opts, hitch.Detached())
			}
			if instructions != "" {
				opts = append(opts, hitch.WithInstructions(instructions))
			}
			if tenant != "" {
				opts = append(opts, hitch.WithTenant(tenant))
			}
			res, err := e.rt.Start(ctx, ag, a[0], opts...)
			if err != nil {
				return err
			}
			e.out.started(res)
			if !res.Created {
				if !res.SameInput {
					e.out.outcome(res.Run)
					return withCode(exitRefused, fmt.Errorf("run %s already exists with a different input; nothing was started", res.Run.ID))
				}
				if !g.json {
					fmt.Fprintf(g.stderr, "run %s was already started, with the same input; following it\n", res.Run.ID)
				}
			}
			if detach {
				e.out.outcome(res.Run)
				return nil
			}
			return e.settle(ctx, res.Run.ID)
		}),
	}
	cmd.Flags().StringVar(&agent, "agent", "", "agent to run (default: the only one in the config)")
	cmd.Flags().StringVar(&id, "id", "", "run id; starting an existing id starts nothing")
	cmd.Flags().BoolVar(&detach, "detach", false, "queue the run for a worker and return at once")
	cmd.Flags().StringVar(&instructions, "instructions", "", "instructions for this run, laid over the agent's")
	cmd.Flags().StringVar(&tenant, "tenant", "", "tenant the run belongs to (default: \"default\")")
	return cmd
}

func newCancel(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel RUN",
		Short: "Cancel a run (durably; cancelling twice is harmless)",
		Args:  args(1, "one RUN id"),
		RunE: withRuntime(g, func(ctx context.Context, e *env, a []string) error {
			run, err := e.rt.Cancel(ctx, a[0])
			if err != nil {
				return notFound(err)
			}
			e.out.outcome(run)
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
		RunE: func(cmd *cobra.Command, a []string) error {
			if (output == "") == !unconfirmed {
				return usageError{fmt.Errorf("give exactly one of --output TEXT or --unconfirmed")}
			}
			ctx := cmd.Context()
			e, err := openRuntime(ctx, g, false)
			if err != nil {
				return err
			}
			defer e.close()
			err = e.rt.Reconcile(ctx, a[0], hitch.Reconciliation{Call: a[1], Output: output, Unconfirmed: unconfirmed, By: by})
			if err != nil {
				if isRefusal(err) {
					return withCode(exitRefused, err)
				}
				return notFound(err)
			}
			return e.settle(ctx, a[0])
		},
	}
	cmd.Flags().StringVar(&output, "output", "", "the call's confirmed result, shown to the model")
	cmd.Flags().BoolVar(&unconfirmed, "unconfirmed", false, "the outcome cannot be established; tell the model so")
	cmd.Flags().StringVar(&by, "by", "cli", "who reconciles, recorded in the journal")
	return cmd
}

// warnMissingKey says, before a run starts, when its model's API key
// variable is not set: its calls would be refused as unauthorized.
func warnMissingKey(g *globals, e *env, agent string) {
	for _, a := range e.cfg.File.Agents {
		if a.Name != agent {
			continue
		}
		if env := e.cfg.File.Models[a.Model].KeyEnv(); env != "" && vault.getenv(env) == "" {
			fmt.Fprintf(g.stderr, "hitch: warning: %s is not set; model %q will refuse the calls of agent %s\n", env, a.Model, agent)
		}
	}
}
