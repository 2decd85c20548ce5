package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/approval"
)

func newApprovals(g *globals) *cobra.Command {
	var pg page
	var root string
	list := &cobra.Command{
		Use:   "list",
		Short: "List approval requests waiting for an answer, oldest first (--after pages on)",
		Long: "List approval requests waiting for an answer, oldest run first, one page of at most --limit.\n" +
			"When more may follow, the cursor of the next page is printed on stderr; pass it to --after.",
		Args: args(0, "no arguments"),
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := pg.check(); err != nil {
				return err
			}
			if cmd.Flags().Changed("run") {
				return checkID("--run", root)
			}
			return nil
		},
		RunE: withBackend(g, needRuntime, func(ctx context.Context, v *verb, _ []string) error {
			if root != "" {
				// A family that does not exist is not found, never an
				// empty list.
				if _, err := v.b.Run(ctx, root); err != nil {
					return err
				}
			}
			page, next, err := v.b.Approvals(ctx, root, pg.after, pg.limit)
			if err != nil {
				return err
			}
			return printApprovals(v, page, next)
		}),
	}
	list.Flags().StringVar(&root, "run", "", "only the requests of this run's family (the root run and its sub-agents)")
	pg.flags(list, "the cursor a previous page printed: list the requests after it", 50, "")

	show := &cobra.Command{
		Use:   "show RUN CALL",
		Short: "Show one approval request in full",
		Args:  args(2, "RUN and CALL"),
		RunE: withBackend(g, needRuntime, func(ctx context.Context, v *verb, a []string) error {
			p, err := v.b.Approval(ctx, a[0], a[1])
			if err != nil {
				return err
			}
			if g.json {
				v.printJSON(p)
				return nil
			}
			fmt.Fprintf(g.stdout, "run          %s (agent %s, family %s)\ncall         %s\ntool         %s\narguments    %s\nrequirement  %s\nreason       %s\nexpires      %s\n",
				p.RunID, p.Agent, p.RootID, p.Call, p.Tool, compactJSON(p.Arguments), p.Requirement, or(p.Reason, "-"), expires(p.ExpiresAt))
			return nil
		}),
	}
	return group("approvals", "List, show and answer approval requests", list, show, newAnswer(g, true), newAnswer(g, false))
}

// printApprovals prints a page of requests; a next page's cursor goes to
// stderr.
func printApprovals(v *verb, page []hitch.PendingApproval, next string) error {
	if next != "" {
		defer fmt.Fprintf(v.g.stderr, "more: --after %s\n", next)
	}
	if len(page) == 0 && !v.g.json {
		if next == "" {
			fmt.Fprintln(v.g.stdout, "no approval requests are waiting")
		}
		return nil
	}
	return printList(v, page, asIs, "RUN\tCALL\tTOOL\tREQUIREMENT\tEXPIRES\tARGUMENTS", func(p hitch.PendingApproval) string {
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", p.RunID, p.Call, p.Tool, p.Requirement, expires(p.ExpiresAt), clip(compactJSON(p.Arguments), 60))
	})
}

func newAnswer(g *globals, approve bool) *cobra.Command {
	var credential, credentialEnv, reason string
	var cred approval.Credential
	use, short := "approve RUN CALL", "Approve a request (with a credential), then follow the run"
	if !approve {
		use, short = "reject RUN CALL", "Reject a request (with a credential), then follow the run"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long: short + ".\nThe credential is \"name:secret\", read from the variable named by --credential-env (default\n" +
			"HITCH_CREDENTIAL) or given with --credential. It is checked against the agent's approvers for the request's\n" +
			"requirement; the policy is asked again before a grant takes effect.",
		Args: args(2, "RUN and CALL"),
		PreRunE: func(*cobra.Command, []string) error {
			var err error
			cred, err = credentialFrom(credential, credentialEnv)
			return err
		},
		RunE: withBackend(g, needRuntime, func(ctx context.Context, v *verb, a []string) error {
			return v.moveOn(ctx, a[0], func() error { return v.b.Answer(ctx, a[0], a[1], cred, approve, reason) })
		}),
	}
	cmd.Flags().StringVar(&credential, "credential", "", `"name:secret" (visible to other local users in the process list; prefer the variable)`)
	cmd.Flags().StringVar(&credentialEnv, "credential-env", "HITCH_CREDENTIAL", "variable holding the credential")
	if !approve {
		cmd.Flags().StringVar(&reason, "reason", "", "why, shown to the model")
	}
	return cmd
}

// credentialFrom reads an approver's credential from a flag's value, else
// from a variable, which then leaves the environment with the config's.
func credentialFrom(raw, env string) (approval.Credential, error) {
	if raw == "" {
		raw = vault.credential(env)
	}
	if raw == "" {
		return approval.Credential{}, usageError{fmt.Errorf("no credential: set %s=name:secret or pass --credential", env)}
	}
	cred, err := approval.ParseCredential(raw)
	if err != nil {
		return approval.Credential{}, usageError{err}
	}
	return cred, nil
}

// compactJSON is JSON without insignificant space, as the API sends it.
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// envCredential reads an approver's credential from a variable, which
// then leaves the environment with the config's; nil when it is not set.
func envCredential(env string) (*approval.Credential, error) {
	raw := vault.credential(env)
	if raw == "" {
		return nil, nil
	}
	c, err := approval.ParseCredential(raw)
	if err != nil {
		return nil, usageError{fmt.Errorf("%s: %w", env, err)}
	}
	return &c, nil
}

func expires(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return t.Local().Format(time.DateTime)
}
