package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/client"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// With --server URL (or HITCH_SERVER), the commands that act on runs,
// approvals, workspaces and sessions talk to a hitch serve through package
// client instead of opening the store. The server's problem types map to
// exit codes by the one table, api.Problems (docs/cli.md).

const (
	serverEnv = "HITCH_SERVER"
	tokenEnv  = "HITCH_TOKEN"
)

// localOnly says why the commands that need the store or the agents in
// this process cannot work with --server; a command without a remote form
// that is not listed here or in localFine is refused too.
var localOnly = map[string]string{
	"hitch demo":    "it runs its own offline store",
	"hitch migrate": "it migrates a store this machine opens",
	"hitch worker":  "a worker is a node: it opens the store",
	"hitch recover": "it drives runs from the store",
	"hitch bench":   "it measures the store on this machine",
	"hitch serve":   "it is the server",
	"hitch mcp":     "it serves the config's agents itself",
}

// localFine are the commands that read only the local config, and work
// with --server as without.
var localFine = map[string]bool{"hitch models": true, "hitch models check": true, "hitch help": true, "hitch completion": true}

// goRemote swaps a command's body for its remote one, or refuses a command
// that cannot work remotely.
func goRemote(g *globals, cmd *cobra.Command) error {
	path := cmd.CommandPath()
	fn, ok := remoteCommands(g)[path]
	if !ok {
		if cmd.HasSubCommands() || localFine[path] || strings.HasPrefix(path, "hitch completion") || strings.HasPrefix(path, "hitch __complete") {
			return nil // help, config checks: local as ever
		}
		why, ok := localOnly[path]
		if !ok {
			why = "it has no remote form yet"
		}
		return usageError{fmt.Errorf("%s cannot work with --server (%s): run it where the store is, without --server and %s", path, why, serverEnv)}
	}
	c, err := client.New(g.server, client.WithToken(os.Getenv(tokenEnv)))
	if err != nil {
		return usageError{fmt.Errorf("--server: %w", err)}
	}
	cmd.RunE = func(cmd *cobra.Command, a []string) error {
		return fn(cmd.Context(), &remote{g: g, c: c, out: newPrinter(g.stdout, g.json), cmd: cmd}, a)
	}
	return nil
}

// exitOfProblem is the exit code of a server's problem, from the one
// table; ok is false for an error that is not one.
func exitOfProblem(err error) (int, bool) {
	var pe *client.Error
	if !errors.As(err, &pe) {
		return 0, false
	}
	return pe.Exit(), true
}

// remote is what a remote command works with.
type remote struct {
	g   *globals
	c   *client.Client
	out *printer
	cmd *cobra.Command
}

func (r *remote) str(name string) string   { v, _ := r.cmd.Flags().GetString(name); return v }
func (r *remote) boolean(name string) bool { v, _ := r.cmd.Flags().GetBool(name); return v }

func (r *remote) printJSON(v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(r.g.stdout, "%s\n", b)
}

func remoteCommands(g *globals) map[string]func(context.Context, *remote, []string) error {
	return map[string]func(context.Context, *remote, []string) error{
		"hitch run":                remoteRun,
		"hitch runs list":          remoteRunsList,
		"hitch runs show":          remoteRunsShow,
		"hitch runs events":        remoteRunsEvents,
		"hitch cancel":             remoteCancel,
		"hitch reconcile":          remoteReconcile,
		"hitch approvals list":     remoteApprovalsList,
		"hitch approvals show":     remoteApprovalsShow,
		"hitch approvals approve":  func(ctx context.Context, r *remote, a []string) error { return remoteAnswer(ctx, r, a, true) },
		"hitch approvals reject":   func(ctx context.Context, r *remote, a []string) error { return remoteAnswer(ctx, r, a, false) },
		"hitch workspace list":     remoteWorkspaceList,
		"hitch workspace grant":    func(ctx context.Context, r *remote, a []string) error { return remoteWorkspaceChange(ctx, r, a, false) },
		"hitch workspace revoke":   func(ctx context.Context, r *remote, a []string) error { return remoteWorkspaceChange(ctx, r, a, true) },
		"hitch sessions list":      remoteSessionsList,
		"hitch sessions show":      remoteSessionsShow,
		"hitch sessions send":      remoteSessionsSend,
		"hitch sessions queue":     remoteSessionsQueue,
		"hitch sessions edit":      remoteSessionsEdit,
		"hitch sessions remove":    remoteSessionsRemove,
		"hitch sessions interrupt": remoteSessionsInterrupt,
		"hitch chat":               remoteChat,
	}
}

// runOf turns the wire's run into the runtime's, for the printer.
func runOf(r api.Run) hitch.Run {
	out := hitch.Run{ID: r.ID, Tenant: r.Tenant, RootID: r.RootID, ParentID: r.ParentID, Agent: r.Agent, Version: r.Version,
		Status: hitchtype.Status(r.Status), Position: r.Position, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if o := r.Outcome; o != nil {
		out.Outcome = &hitch.Outcome{Status: hitchtype.Status(o.Status), Answer: o.Answer, Raw: o.Raw, Reason: o.Reason, Error: o.Error,
			Uncertain: o.Uncertain, Turns: o.Turns, Attempts: o.Attempts, CostUSD: o.CostUSD,
			Usage: hitchtype.Usage{InputTokens: o.Usage.InputTokens, OutputTokens: o.Usage.OutputTokens,
				CachedInputTokens: o.Usage.CachedInputTokens, Generations: o.Usage.Generations}}
	}
	return out
}

func entryOf(e api.Entry) store.Entry {
	return store.Entry{RunID: e.RunID, Pos: e.Pos, Kind: e.Kind, At: e.At, Data: e.Data}
}

// settle prints a run's entries after position after as they come, until
// the run has ended, or has parked with a run.waiting entry after after
// and nothing since; then its outcome, and its exit code. A command that
// answers a parked run passes the position from before its answer.
func (r *remote) settle(ctx context.Context, id string, after int64) error {
	r.out.following(id)
	for e, err := range r.c.Follow(ctx, id, after) {
		if err != nil {
			return err
		}
		r.out.mu.Lock()
		r.out.entry(entryOf(e))
		r.out.mu.Unlock()
		if e.Kind == hitchtype.KindRunWaiting {
			run, err := r.c.Run(ctx, id)
			if err != nil {
				return err
			}
			if run.Status == string(hitchtype.StatusWaiting) && run.Position == e.Pos {
				break
			}
		}
	}
	run, err := r.c.Run(ctx, id)
	if err != nil {
		return err
	}
	r.out.outcome(runOf(run))
	return exitFor(runOf(run))
}

func remoteRun(ctx context.Context, r *remote, a []string) error {
	agent := r.str("agent")
	if agent == "" {
		list, err := r.c.Agents(ctx)
		if err != nil {
			return err
		}
		if len(list.Agents) != 1 {
			names := make([]string, 0, len(list.Agents))
			for _, ag := range list.Agents {
				names = append(names, ag.Name)
			}
			return usageError{fmt.Errorf("--agent: the server has %d agents (%s): name one", len(names), strings.Join(names, ", "))}
		}
		agent = list.Agents[0].Name
	}
	if r.str("tenant") != "" {
		return usageError{fmt.Errorf("--tenant: with --server the run is filed under the token's tenant")}
	}
	id := r.str("id")
	if id == "" {
		id = hitch.NewRunID()
	}
	r.out.following(id)
	res, err := r.c.StartRun(ctx, api.StartRun{Agent: agent, Input: a[0], ID: id, Instructions: r.str("instructions")})
	if err != nil {
		return err
	}
	r.out.started(hitch.StartResult{Run: runOf(res.Run), Created: res.Created, SameInput: res.SameInput})
	if !res.Created && !r.g.json {
		fmt.Fprintf(r.g.stderr, "run %s was already started, with the same input; following it\n", res.Run.ID)
	}
	if r.boolean("detach") {
		r.out.outcome(runOf(res.Run))
		return nil
	}
	return r.settle(ctx, res.Run.ID, 0)
}

func remoteRunsList(ctx context.Context, r *remote, _ []string) error {
	status, _ := r.cmd.Flags().GetStringSlice("status")
	limit, _ := r.cmd.Flags().GetInt("limit")
	if err := checkLimit(limit); err != nil {
		return err
	}
	if r.str("tenant") != "" {
		return usageError{fmt.Errorf("--tenant: with --server the token's tenant is the one listed")}
	}
	f := client.RunFilter{Status: status, Agent: r.str("agent"), After: r.str("after"), Limit: limit, Text: r.str("text")}
	var err error
	if f.CreatedAfter, f.CreatedBefore, err = runsWindow(r.str("since"), r.str("until"), time.Now()); err != nil {
		return err
	}
	page, err := r.c.Runs(ctx, f)
	if err != nil {
		return err
	}
	if page.Next != "" {
		defer fmt.Fprintf(r.g.stderr, "more: --after %s\n", page.Next)
	}
	if r.g.json {
		for _, run := range page.Runs {
			r.printJSON(runJSON(runOf(run)))
		}
		return nil
	}
	tw := tabwriter.NewWriter(r.g.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTENANT\tAGENT\tSTATUS\tSTEPS\tUPDATED")
	for _, run := range page.Runs {
		fmt.Fprintf(tw, "%s\t%s\t%s v%d\t%s\t%d\t%s\n", run.ID, run.Tenant, run.Agent, run.Version, run.Status, run.Position, run.UpdatedAt.Local().Format(time.DateTime))
	}
	return tw.Flush()
}

func remoteRunsEvents(ctx context.Context, r *remote, a []string) error {
	after, _ := r.cmd.Flags().GetInt64("after")
	if after < 0 {
		return usageError{fmt.Errorf("--after %d: want 0 (from the start) or a position", after)}
	}
	r.out.following(a[0])
	if r.boolean("follow") {
		for e, err := range r.c.Follow(ctx, a[0], after) {
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			r.out.entry(entryOf(e))
		}
		return nil
	}
	for {
		page, err := r.c.Journal(ctx, a[0], after, 0)
		if err != nil {
			return err
		}
		for _, e := range page.Entries {
			r.out.entry(entryOf(e))
			after = e.Pos
		}
		if page.Next == nil {
			return nil
		}
	}
}

func remoteCancel(ctx context.Context, r *remote, a []string) error {
	run, err := r.c.Cancel(ctx, a[0])
	if err != nil {
		return err
	}
	r.out.outcome(runOf(run))
	if !hitchtype.Status(run.Status).Terminal() {
		return withCode(exitRefused, fmt.Errorf("cancel of %s is recorded; its runner has not settled yet (status %s)", run.ID, run.Status))
	}
	return nil
}

func remoteReconcile(ctx context.Context, r *remote, a []string) error {
	output, unconfirmed, by := r.str("output"), r.boolean("unconfirmed"), r.str("by")
	if (output == "") == !unconfirmed {
		return usageError{fmt.Errorf("give exactly one of --output TEXT or --unconfirmed")}
	}
	before, err := r.c.Run(ctx, a[0])
	if err != nil {
		return err
	}
	if _, err := r.c.Reconcile(ctx, a[0], api.Reconcile{Call: a[1], Output: output, Unconfirmed: unconfirmed, By: by}); err != nil {
		return err
	}
	return r.settle(ctx, a[0], before.Position)
}

func approvalOf(p api.Approval) hitch.PendingApproval {
	return hitch.PendingApproval{RunID: p.RunID, RootID: p.RootID, Agent: p.Agent, Call: p.Call, Tool: p.Tool,
		Arguments: p.Arguments, Requirement: p.Requirement, Reason: p.Reason, ExpiresAt: p.ExpiresAt}
}

func remoteApprovalsList(ctx context.Context, r *remote, _ []string) error {
	limit, _ := r.cmd.Flags().GetInt("limit")
	page, err := r.c.Approvals(ctx, r.str("run"), r.str("after"), limit)
	if err != nil {
		return err
	}
	out := make([]hitch.PendingApproval, len(page.Approvals))
	for i, p := range page.Approvals {
		out[i] = approvalOf(p)
	}
	return printApprovals(r.g, out, page.Next)
}

func remoteApprovalsShow(ctx context.Context, r *remote, a []string) error {
	p, err := r.c.Approval(ctx, a[0], a[1])
	if err != nil {
		return err
	}
	if r.g.json {
		r.printJSON(approvalOf(p))
		return nil
	}
	fmt.Fprintf(r.g.stdout, "run          %s (agent %s, family %s)\ncall         %s\ntool         %s\narguments    %s\nrequirement  %s\nreason       %s\nexpires      %s\n",
		p.RunID, p.Agent, p.RootID, p.Call, p.Tool, p.Arguments, p.Requirement, or(p.Reason, "-"), expires(p.ExpiresAt))
	return nil
}

func remoteAnswer(ctx context.Context, r *remote, a []string, approve bool) error {
	raw := r.str("credential")
	env := r.str("credential-env")
	if raw == "" {
		raw = os.Getenv(env)
	}
	if raw == "" {
		return usageError{fmt.Errorf("no credential: set %s=name:secret or pass --credential", env)}
	}
	cred, err := approval.ParseCredential(raw)
	if err != nil {
		return usageError{err}
	}
	wire := api.Credential{Name: cred.Name, Secret: cred.Secret}
	before, err := r.c.Run(ctx, a[0])
	if err != nil {
		return err
	}
	if approve {
		_, err = r.c.Approve(ctx, a[0], a[1], wire)
	} else {
		_, err = r.c.Reject(ctx, a[0], a[1], wire, r.str("reason"))
	}
	if err != nil {
		return err
	}
	return r.settle(ctx, a[0], before.Position)
}

func remoteWorkspaceList(ctx context.Context, r *remote, a []string) error {
	roots, err := r.c.Workspace(ctx, a[0])
	if err != nil {
		return err
	}
	if r.g.json {
		r.printJSON(roots.Roots)
		return nil
	}
	if len(roots.Roots) == 0 {
		fmt.Fprintln(r.g.stdout, "no roots granted beyond the workspace")
	}
	for _, root := range roots.Roots {
		fmt.Fprintln(r.g.stdout, root)
	}
	return nil
}

func remoteWorkspaceChange(ctx context.Context, r *remote, a []string, revoke bool) error {
	var err error
	if revoke {
		_, err = r.c.Revoke(ctx, a[0], a[1])
	} else {
		_, err = r.c.Grant(ctx, a[0], a[1])
	}
	if err != nil {
		return err
	}
	if !r.g.json {
		verb := "granted to"
		if revoke {
			verb = "revoked from"
		}
		fmt.Fprintf(r.g.stdout, "%s %s %s\n", a[1], verb, a[0])
	}
	return nil
}
