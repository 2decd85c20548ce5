package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

func newRuns(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "runs", Short: "List and inspect runs"}
	var status []string
	var tenant, agent, cursor, text, since, until string
	var limit int
	list := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first (--after pages on)",
		Long: "List runs newest first, filtered by tenant, agent, status, creation time and text. When the page is full, the cursor of the\n" +
			"next page is printed on stderr; pass it to --after.",
		Args: args(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkLimit(limit); err != nil {
				return err
			}
			if tenant != "" {
				if err := checkTenant("--tenant", tenant); err != nil {
					return err
				}
			}
			if cursor != "" {
				if _, err := store.ParseRunCursor(cursor); err != nil {
					return usageError{fmt.Errorf("--after: %w", err)}
				}
			}
			e, err := openStore(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer e.store.Close()
			p := store.RunListParams{Tenant: tenant, Agent: agent, After: cursor, Limit: limit, Text: text}
			if p.CreatedAfter, p.CreatedBefore, err = runsWindow(since, until, time.Now()); err != nil {
				return err
			}
			for _, s := range status {
				if !hitchtype.Status(s).Valid() {
					return usageError{fmt.Errorf("--status %q: want queued, running, waiting, completed, failed, cancelled, answer_invalid or budget_exhausted", s)}
				}
				p.Statuses = append(p.Statuses, hitchtype.Status(s))
			}
			runs, err := e.store.RunList(cmd.Context(), p)
			if err != nil {
				return err
			}
			if len(runs) == limit {
				defer fmt.Fprintf(g.stderr, "more: --after %s\n", store.RunCursor(runs[len(runs)-1]))
			}
			if g.json {
				for _, r := range runs {
					hr, err := hitch.RunOf(r)
					if err != nil {
						return err
					}
					b, _ := json.Marshal(runJSON(hr))
					fmt.Fprintf(g.stdout, "%s\n", b)
				}
				return nil
			}
			tw := tabwriter.NewWriter(g.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTENANT\tAGENT\tSTATUS\tSTEPS\tUPDATED")
			for _, r := range runs {
				fmt.Fprintf(tw, "%s\t%s\t%s v%d\t%s\t%d\t%s\n", r.ID, r.Tenant, r.Agent, r.Version, r.Status, r.Position, r.UpdatedAt.Local().Format(time.DateTime))
			}
			return tw.Flush()
		},
	}
	list.Flags().StringSliceVar(&status, "status", nil, "only runs with these statuses")
	list.Flags().StringVar(&tenant, "tenant", "", "only this tenant's runs (default: every tenant)")
	list.Flags().StringVar(&agent, "agent", "", "only runs of this agent")
	list.Flags().StringVar(&cursor, "after", "", "the cursor a previous page printed: list the runs after it")
	list.Flags().IntVar(&limit, "limit", 50, "most runs to list (at most 1000)")
	list.Flags().StringVar(&text, "text", "", "only runs whose id, agent or input's head contains this (ignoring ASCII case)")
	list.Flags().StringVar(&since, "since", "", "only runs created at or after this: an RFC 3339 time, or a duration ago (2h)")
	list.Flags().StringVar(&until, "until", "", "only runs created before this: an RFC 3339 time, or a duration ago")

	show := &cobra.Command{
		Use:   "show RUN",
		Short: "Show a run: status, outcome, usage, and its calls",
		Args:  args(1, "one RUN id"),
		RunE: func(cmd *cobra.Command, a []string) error {
			return showRun(cmd.Context(), g, a[0])
		},
	}

	var after int64
	var follow bool
	events := &cobra.Command{
		Use:   "events RUN",
		Short: "Print a run's journal from an offset, optionally following it",
		Args:  args(1, "one RUN id"),
		RunE: func(cmd *cobra.Command, a []string) error {
			if after < 0 {
				return usageError{fmt.Errorf("--after %d: want 0 (from the start) or a position", after)}
			}
			ctx := cmd.Context()
			e, err := openStore(ctx, g)
			if err != nil {
				return err
			}
			defer e.store.Close()
			return followJournal(ctx, e, a[0], after, follow)
		},
	}
	events.Flags().Int64Var(&after, "after", 0, "print entries after this position")
	events.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new entries until the run ends")
	cmd.AddCommand(list, show, events)
	return cmd
}

func followJournal(ctx context.Context, e *env, id string, after int64, follow bool) error {
	e.out.following(id)
	if _, err := e.store.RunGet(ctx, id); err != nil {
		return notFound(err)
	}
	for {
		es, err := e.store.JournalRead(ctx, store.JournalReadParams{RunID: id, After: after})
		if err != nil {
			return err
		}
		for _, en := range es {
			e.out.entry(en)
			after = en.Pos
		}
		if len(es) == store.DefaultReadLimit {
			continue
		}
		if !follow {
			return nil
		}
		run, err := e.store.RunGet(ctx, id)
		if err != nil {
			return err
		}
		if run.Status.Terminal() && run.Position == after {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func showRun(ctx context.Context, g *globals, id string) error {
	e, err := openStore(ctx, g)
	if err != nil {
		return err
	}
	defer e.store.Close()
	r, err := e.store.RunGet(ctx, id)
	if err != nil {
		return notFound(err)
	}
	run, err := hitch.RunOf(r)
	if err != nil {
		return err
	}
	calls, err := callsOf(ctx, e.store, id)
	if err != nil {
		return err
	}
	rt, err := hitch.Open(hitch.Config{Store: e.store})
	if err != nil {
		return err
	}
	fam, err := rt.FamilyUsage(ctx, run.RootID)
	if err != nil {
		return err
	}
	limits, used, hasBudget, err := e.store.BudgetGet(ctx, run.RootID)
	if err != nil {
		return err
	}
	sbox, err := sandboxOf(ctx, e.store, id)
	if err != nil {
		return err
	}
	reqs, moreReqs, err := rt.LatestContextRequests(ctx, id, maxContextRows)
	if err != nil {
		return err
	}
	famCost, err := rt.FamilyCost(ctx, run.RootID)
	if err != nil {
		return err
	}
	if g.json {
		view := struct {
			Run     runView      `json:"run"`
			Calls   []callView   `json:"calls"`
			Family  familyView   `json:"family"`
			Budget  *budgetsView `json:"budget,omitempty"`
			Waits   []hitch.Wait `json:"waits,omitempty"`
			Sandbox *sandboxView `json:"sandbox,omitempty"`
			// Requests are the run's latest model requests with their
			// context accounts; MoreRequests says earlier ones exist.
			Requests     []hitchtype.ContextRequest `json:"requests"`
			MoreRequests bool                       `json:"more_requests,omitempty"`
			// FamilyCost is what the run's family has cost so far.
			FamilyCost *runningCostView `json:"family_cost"`
		}{runJSON(run), calls, familyView{fam.Runs, fam.Usage, fam.CostUSD}, nil, nil, sbox, reqs, moreReqs, costJSON(&famCost)}
		if view.Requests == nil {
			view.Requests = []hitchtype.ContextRequest{}
		}
		if run.Status == hitchtype.StatusWaiting {
			view.Waits = waitsOf(ctx, e.store, id)
		}
		if view.Calls == nil {
			view.Calls = []callView{}
		}
		if hasBudget {
			view.Budget = &budgetsView{budgetJSON(limits), budgetJSON(used)}
		}
		b, _ := json.Marshal(view)
		fmt.Fprintf(g.stdout, "%s\n", b)
		return nil
	}
	w := g.stdout
	fmt.Fprintf(w, "run      %s\nagent    %s v%d\nstatus   %s\njournal  %d entries\ncreated  %s\nupdated  %s\n",
		run.ID, run.Agent, run.Version, run.Status, run.Position,
		run.CreatedAt.Local().Format(time.DateTime), run.UpdatedAt.Local().Format(time.DateTime))
	if o := run.Outcome; o != nil {
		if o.Answer != "" {
			fmt.Fprintf(w, "answer   %s\n", o.Answer)
		}
		if o.Reason != "" {
			fmt.Fprintf(w, "reason   %s\n", o.Reason)
		}
		if o.Error != "" {
			fmt.Fprintf(w, "error    %s\n", o.Error)
		}
		fmt.Fprintf(w, "usage    %d generations, tokens in %s, out %s, cached in %s\n", o.Usage.Generations,
			count(o.Usage.InputTokens), count(o.Usage.OutputTokens), count(o.Usage.CachedInputTokens))
		fmt.Fprintf(w, "cost     %s\n", usd(o.CostUSD))
	}
	if fam.Runs > 1 {
		fmt.Fprintf(w, "family   %d runs, tokens in %s, out %s, cost %s\n", fam.Runs, count(fam.Usage.InputTokens), count(fam.Usage.OutputTokens), usd(fam.CostUSD))
	}
	fmt.Fprintf(w, "spent    %s\n", costLine(famCost, "in the family"))
	if hasBudget {
		fmt.Fprintf(w, "budget   %s\n", budgetLine(limits, used))
	}
	if sbox != nil {
		if sbox.Isolation != "" {
			fmt.Fprintf(w, "sandbox  commands isolated by %s\n", sbox.Isolation)
		}
		if sbox.Warning != "" {
			fmt.Fprintf(w, "sandbox  WARNING: %s\n", sbox.Warning)
		}
	}
	if len(calls) > 0 {
		fmt.Fprintln(w, "\ncalls")
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		for _, c := range calls {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Call, c.Tool, c.State, clip(c.Detail, 80))
		}
		_ = tw.Flush()
	}
	printContext(w, reqs, moreReqs)
	if run.Status == hitchtype.StatusWaiting {
		printWaits(ctx, w, e.store, id)
		fmt.Fprintln(w)
		fmt.Fprintln(w, waitingHint(ctx, e.store, run))
	}
	return nil
}

// waitingHint says what a waiting run waits for and how to move it on.
func waitingHint(ctx context.Context, st store.Store, run hitch.Run) string {
	var w hitchtype.RunWaiting
	if es, err := st.JournalRead(ctx, store.JournalReadParams{RunID: run.ID, After: run.Position - 1}); err == nil && len(es) == 1 && es[0].Kind == hitchtype.KindRunWaiting {
		_ = json.Unmarshal(es[0].Data, &w)
	}
	calls := strings.Join(w.Calls, ", ")
	switch w.Reason {
	case "approval":
		return fmt.Sprintf("this run waits for a person to answer %s:\n  hitch approvals approve %s CALL   (or reject; HITCH_CREDENTIAL=name:secret)", calls, run.ID)
	case "children":
		return fmt.Sprintf("this run waits for its sub-agent runs (%s); see hitch runs list", calls)
	case "event", "external":
		return fmt.Sprintf("this run is parked on the outside world (%s):\n  hitch wake %s --event NAME [--data JSON]   (an awaited event)\n  hitch calls complete %s CALL --output TEXT   (or --error TEXT; a pending call)", calls, run.ID, run.ID)
	case "uncertain":
		return fmt.Sprintf("this run waits for %s, whose effect is unknown, to be reconciled:\n  hitch reconcile %s CALL --output TEXT   (or --unconfirmed)", calls, run.ID)
	}
	return "this run waits; hitch runs events " + run.ID + " shows why"
}

func usd(v *float64) string {
	if v == nil {
		return "unknown (no price, or a counter was not reported)"
	}
	return fmt.Sprintf("$%.6f", *v)
}

func budgetLine(limits, used store.Budget) string {
	var parts []string
	add := func(name string, u, l int64) {
		if l > 0 {
			parts = append(parts, fmt.Sprintf("%s %d/%d", name, u, l))
		}
	}
	add("tokens", used.Tokens, limits.Tokens)
	add("model calls", used.ModelCalls, limits.ModelCalls)
	add("tool calls", used.ToolCalls, limits.ToolCalls)
	if limits.MicroUSD > 0 {
		parts = append(parts, fmt.Sprintf("usd %.4f/%.4f", float64(used.MicroUSD)/1e6, float64(limits.MicroUSD)/1e6))
	}
	if limits.WallMS > 0 {
		parts = append(parts, fmt.Sprintf("wall time %s", time.Duration(limits.WallMS)*time.Millisecond))
	}
	return strings.Join(parts, ", ")
}

// familyView is a family's totals as `runs show --json` reports them.
type familyView struct {
	Runs    int         `json:"runs"`
	Usage   hitch.Usage `json:"usage"`
	CostUSD *float64    `json:"cost_usd"`
}

// budgetsView is a family budget's limits and what was used of them.
type budgetsView struct {
	Limits budgetView `json:"limits"`
	Used   budgetView `json:"used"`
}

type budgetView struct {
	Tokens     int64   `json:"tokens"`
	USD        float64 `json:"usd"`
	ModelCalls int64   `json:"model_calls"`
	ToolCalls  int64   `json:"tool_calls"`
	WallMS     int64   `json:"wall_ms"`
}

func budgetJSON(b store.Budget) budgetView {
	return budgetView{Tokens: b.Tokens, USD: float64(b.MicroUSD) / 1e6, ModelCalls: b.ModelCalls, ToolCalls: b.ToolCalls, WallMS: b.WallMS}
}

// callView is one call as `runs show` reports it.
type callView struct {
	Call   string `json:"call"`
	Tool   string `json:"tool"`
	Args   string `json:"arguments"`
	State  string `json:"state"`
	Detail string `json:"detail,omitempty"`
}

// callsOf reads a journal and summarizes each call's latest state.
func callsOf(ctx context.Context, st store.Store, id string) ([]callView, error) {
	var views []callView
	idx := map[string]int{}
	set := func(key, state, detail string) {
		if i, ok := idx[key]; ok {
			views[i].State, views[i].Detail = state, detail
		}
	}
	now, err := st.Now(ctx)
	if err != nil {
		return nil, err
	}
	after := int64(0)
	for {
		es, err := st.JournalRead(ctx, store.JournalReadParams{RunID: id, After: after})
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			after = e.Pos
			switch e.Kind {
			case hitchtype.KindModelReply:
				var d hitchtype.ModelReply
				if err := json.Unmarshal(e.Data, &d); err != nil {
					return nil, fmt.Errorf("entry %d: %w", e.Pos, err)
				}
				for i, c := range d.Reply.ToolCalls {
					key := fmt.Sprintf("t%dc%d", d.Turn, i+1)
					idx[key] = len(views)
					views = append(views, callView{Call: key, Tool: c.Name, Args: c.Arguments, State: "planned"})
				}
			case hitchtype.KindCallDecided:
				var d hitchtype.CallDecided
				_ = json.Unmarshal(e.Data, &d)
				switch d.Verdict {
				case "deny":
					set(d.Call, "denied", d.Reason)
				case "approval":
					if d.ExpiresAt != nil && !now.Before(*d.ExpiresAt) {
						set(d.Call, "expired", "approval deadline "+d.ExpiresAt.UTC().Format(time.RFC3339))
					} else {
						set(d.Call, "needs approval", d.Requirement)
					}
				default:
					set(d.Call, "allowed", "")
				}
			case hitchtype.KindApprovalGrant, hitchtype.KindApprovalDeny:
				var d hitchtype.ApprovalAnswer
				_ = json.Unmarshal(e.Data, &d)
				set(d.Call, map[string]string{hitchtype.KindApprovalGrant: "approved", hitchtype.KindApprovalDeny: "rejected"}[e.Kind], d.By)
			case hitchtype.KindApprovalLapse:
				var d hitchtype.ApprovalExpired
				_ = json.Unmarshal(e.Data, &d)
				set(d.Call, "expired", "approval deadline "+d.ExpiredAt.UTC().Format(time.RFC3339))
			case hitchtype.KindCallRejected:
				var d hitchtype.CallRejected
				_ = json.Unmarshal(e.Data, &d)
				set(d.Call, "rejected", d.Error)
			case hitchtype.KindCallStarted:
				var d hitchtype.CallStarted
				_ = json.Unmarshal(e.Data, &d)
				set(d.Call, "started", fmt.Sprintf("attempt %d", d.Attempt))
			case hitchtype.KindCallSettled:
				var d hitchtype.CallSettled
				_ = json.Unmarshal(e.Data, &d)
				set(d.Call, "settled", d.Output)
			case hitchtype.KindCallFailed:
				var d hitchtype.CallFailed
				_ = json.Unmarshal(e.Data, &d)
				set(d.Call, "failed", d.Error)
			case hitchtype.KindCallUncertain:
				var d hitchtype.CallUncertain
				_ = json.Unmarshal(e.Data, &d)
				set(d.Call, "uncertain", d.Reason)
			case hitchtype.KindWakeArmed, hitchtype.KindWakeDelivered, hitchtype.KindWakeExpired,
				hitchtype.KindCallPending, hitchtype.KindCallCompleted, hitchtype.KindCallTimedOut:
				key, state, detail := waitState(e)
				set(key, state, detail)
			case hitchtype.KindCallReconcile:
				var d hitchtype.CallReconciled
				_ = json.Unmarshal(e.Data, &d)
				detail := d.Output
				if d.Unconfirmed {
					detail = "unconfirmed"
				}
				set(d.Call, "reconciled", detail)
			}
		}
		if len(es) < store.DefaultReadLimit {
			return views, nil
		}
	}
}

func isRefusal(err error) bool {
	for _, target := range []error{hitch.ErrRunnerBusy, hitch.ErrNotUncertain, hitch.ErrReconciled, hitch.ErrUnknownCall, store.ErrEnded} {
		if errors.Is(err, target) {
			return true
		}
	}
	return strings.Contains(err.Error(), "already")
}

// sandboxView is how a run's commands were isolated, as its last turn
// recorded it.
type sandboxView struct {
	Isolation string `json:"isolation,omitempty"`
	Warning   string `json:"warning,omitempty"`
}

// maxSandboxScan bounds the journal read to find a run's sandbox.
const maxSandboxScan = 10_000

// sandboxOf finds what the run's last context entry says of its sandbox;
// nil when no turn recorded one.
func sandboxOf(ctx context.Context, st store.Store, id string) (*sandboxView, error) {
	var out *sandboxView
	for after := int64(0); after < maxSandboxScan; {
		es, err := st.JournalRead(ctx, store.JournalReadParams{RunID: id, After: after, Limit: 500})
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			if e.Kind != hitchtype.KindContext {
				continue
			}
			var c hitchtype.Context
			if json.Unmarshal(e.Data, &c) == nil && (c.Isolation != "" || c.SandboxWarning != "") {
				out = &sandboxView{Isolation: c.Isolation, Warning: c.SandboxWarning}
			}
		}
		if len(es) < 500 {
			break
		}
		after = es[len(es)-1].Pos
	}
	return out, nil
}

// runsWindow reads --since and --until: RFC 3339 times, or durations
// before now.
func runsWindow(since, until string, now time.Time) (after, before time.Time, err error) {
	parse := func(flag, v string) (time.Time, error) {
		if v == "" {
			return time.Time{}, nil
		}
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			return t, nil
		}
		if d, err := time.ParseDuration(v); err == nil && d >= 0 {
			return now.Add(-d), nil
		}
		return time.Time{}, usageError{fmt.Errorf("%s %q: want an RFC 3339 time (2026-12-01T08:00:00Z) or a duration ago (90m)", flag, v)}
	}
	if after, err = parse("--since", since); err != nil {
		return
	}
	if before, err = parse("--until", until); err != nil {
		return
	}
	if !after.IsZero() && !before.IsZero() && !after.Before(before) {
		err = usageError{fmt.Errorf("--since %s is not before --until %s", since, until)}
	}
	return
}
