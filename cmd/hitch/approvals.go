package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/approval"
)

func newApprovals(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "approvals", Short: "List, show and answer approval requests"}
	var root, after string
	var limit int
	list := &cobra.Command{
		Use:   "list",
		Short: "List approval requests waiting for an answer, oldest first (--after pages on)",
		Long: "List approval requests waiting for an answer, oldest run first, one page of at most --limit.\n" +
			"When more may follow, the cursor of the next page is printed on stderr; pass it to --after.",
		Args: args(0, "no arguments"),
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkLimit(limit); err != nil {
				return err
			}
			if cmd.Flags().Changed("run") {
				return checkID("--run", root)
			}
			return nil
		},
		RunE: withRuntime(g, func(ctx context.Context, e *env, _ []string) error {
			page, next, err := e.rt.PendingApprovals(ctx, hitch.PendingApprovalsParams{RootID: root, After: after, Limit: limit})
			if err != nil {
				return err
			}
			return printApprovals(g, page, next)
		}),
	}
	list.Flags().StringVar(&root, "run", "", "only the requests of this run's family (the root run and its sub-agents)")
	list.Flags().StringVar(&after, "after", "", "the cursor a previous page printed: list the requests after it")
	list.Flags().IntVar(&limit, "limit", 50, "most requests to list (at most 1000)")

	show := &cobra.Command{
		Use:   "show RUN CALL",
		Short: "Show one approval request in full",
		Args:  args(2, "RUN and CALL"),
		RunE: withRuntime(g, func(ctx context.Context, e *env, a []string) error {
			p, err := findPending(ctx, e, a[0], a[1])
			if err != nil {
				return err
			}
			if g.json {
				b, _ := json.Marshal(p)
				fmt.Fprintf(g.stdout, "%s\n", b)
				return nil
			}
			fmt.Fprintf(g.stdout, "run          %s (agent %s, family %s)\ncall         %s\ntool         %s\narguments    %s\nrequirement  %s\nreason       %s\nexpires      %s\n",
				p.RunID, p.Agent, p.RootID, p.Call, p.Tool, p.Arguments, p.Requirement, or(p.Reason, "-"), expires(p.ExpiresAt))
			return nil
		}),
	}
	cmd.AddCommand(list, show, newAnswer(g, true), newAnswer(g, false))
	return cmd
}

// printApprovals prints a page of requests; a next page's cursor goes to
// stderr.
func printApprovals(g *globals, page []hitch.PendingApproval, next string) error {
	if next != "" {
		defer fmt.Fprintf(g.stderr, "more: --after %s\n", next)
	}
	if g.json {
		for _, p := range page {
			b, _ := json.Marshal(p)
			fmt.Fprintf(g.stdout, "%s\n", b)
		}
		return nil
	}
	if len(page) == 0 {
		if next == "" {
			fmt.Fprintln(g.stdout, "no approval requests are waiting")
		}
		return nil
	}
	tw := tabwriter.NewWriter(g.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tCALL\tTOOL\tREQUIREMENT\tEXPIRES\tARGUMENTS")
	for _, p := range page {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.RunID, p.Call, p.Tool, p.Requirement, expires(p.ExpiresAt), clip(string(p.Arguments), 60))
	}
	return tw.Flush()
}

func newAnswer(g *globals, approve bool) *cobra.Command {
	var credential, credentialEnv, reason string
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
		RunE: func(cmd *cobra.Command, a []string) error {
			ctx := cmd.Context()
			raw := credential
			if raw == "" {
				raw = vault.credential(credentialEnv)
			}
			if raw == "" {
				return usageError{fmt.Errorf("no credential: set %s=name:secret or pass --credential", credentialEnv)}
			}
			cred, err := approval.ParseCredential(raw)
			if err != nil {
				return usageError{err}
			}
			e, err := openRuntime(ctx, g, false)
			if err != nil {
				return err
			}
			defer e.close()
			return answer(ctx, e, a[0], a[1], cred, approve, reason)
		},
	}
	cmd.Flags().StringVar(&credential, "credential", "", `"name:secret" (visible to other local users in the process list; prefer the variable)`)
	cmd.Flags().StringVar(&credentialEnv, "credential-env", "HITCH_CREDENTIAL", "variable holding the credential")
	if !approve {
		cmd.Flags().StringVar(&reason, "reason", "", "why, shown to the model")
	}
	return cmd
}

// answer checks the credential, answers the request and follows the run.
func answer(ctx context.Context, e *env, runID, call string, cred approval.Credential, approve bool, reason string) error {
	if err := answerRequest(ctx, e, runID, call, cred, approve, reason); err != nil {
		return err
	}
	return e.settle(ctx, runID)
}

// answerRequest checks the credential against the request's approvers and
// answers it.
func answerRequest(ctx context.Context, e *env, runID, call string, cred approval.Credential, approve bool, reason string) error {
	p, err := findPending(ctx, e, runID, call)
	if err != nil {
		return err
	}
	if v, ok := e.cfg.MissingSecrets[p.Agent+"/"+cred.Name]; ok {
		return withCode(exitRefused, fmt.Errorf("approver %s cannot answer: %s is not set for this process", cred.Name, v))
	}
	approvers, err := e.rt.Approvers(ctx, runID)
	if err != nil {
		return withCode(exitRefused, err)
	}
	proof, err := approvers.Check(ctx, cred, p.Requirement)
	if err != nil {
		return withCode(exitRefused, err)
	}
	if approve {
		err = e.rt.Approve(ctx, runID, call, proof)
	} else {
		err = e.rt.Reject(ctx, runID, call, proof, reason)
	}
	if err != nil {
		if isRefusal(err) || errors.Is(err, hitch.ErrApprovalExpired) || errors.Is(err, hitch.ErrAnswered) || errors.Is(err, hitch.ErrDeniedAtAnswer) {
			return withCode(exitRefused, err)
		}
		return notFound(err)
	}
	return nil
}

func findPending(ctx context.Context, e *env, runID, call string) (hitch.PendingApproval, error) {
	p, err := e.rt.ApprovalRequest(ctx, runID, call)
	if errors.Is(err, hitch.ErrNotFound) {
		return p, notFound(err)
	}
	if err != nil {
		return p, withCode(exitRefused, err)
	}
	return p, nil
}

func expires(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return t.Local().Format(time.DateTime)
}
