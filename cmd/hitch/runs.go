package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
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
	read := storeJournal(e.store, id)
	now, err := e.store.Now(ctx)
	if err != nil {
		return err
	}
	sh := shown{run: run, now: now}
	if sh.calls, err = callsOf(ctx, now, read); err != nil {
		return err
	}
	rt, err := hitch.Open(hitch.Config{Store: e.store})
	if err != nil {
		return err
	}
	if sh.fam, err = rt.FamilyUsage(ctx, run.RootID); err != nil {
		return err
	}
	limits, used, hasBudget, err := e.store.BudgetGet(ctx, run.RootID)
	if err != nil {
		return err
	}
	if hasBudget {
		sh.budget = &budgetsView{budgetJSON(limits), budgetJSON(used)}
	}
	b, err := rt.Budget(ctx, id)
	if err != nil {
		return err
	}
	sh.bounds = b.Counters
	if sh.sandbox, err = sandboxOf(ctx, read); err != nil {
		return err
	}
	if sh.reqs, sh.moreReqs, err = rt.LatestContextRequests(ctx, id, maxContextRows); err != nil {
		return err
	}
	famCost, err := rt.FamilyCost(ctx, run.RootID)
	if err != nil {
		return err
	}
	sh.famCost = famCost
	if run.Status == hitchtype.StatusWaiting {
		sh.waits = waitsOf(ctx, e.store, id)
		sh.hint = waitingHint(ctx, read, run)
	}
	sh.print(g)
	return nil
}

// shown is what `hitch runs show` reports of a run, read from the store
// or, with --server, from the API.
type shown struct {
	run     hitch.Run
	now     time.Time
	calls   []callView
	fam     hitch.FamilyUsage
	budget  *budgetsView
	bounds  []hitch.BudgetCounter
	sandbox *sandboxView
	waits   []hitch.Wait
	hint    string // for a waiting run: what it waits for and how to move it on
	// reqs are the run's latest model requests with their context
	// accounts; moreReqs says earlier ones exist.
	reqs     []hitchtype.ContextRequest
	moreReqs bool
	famCost  hitch.RunningCost // what the family has cost so far
}

// boundView is one bounded counter as `runs show --json` reports it: used
// and left are null when not known.
type boundView struct {
	Scope string   `json:"scope"`
	Name  string   `json:"name"`
	Unit  string   `json:"unit"`
	Limit float64  `json:"limit"`
	Used  *float64 `json:"used"`
	Left  *float64 `json:"left"`
}

func (sh shown) print(g *globals) {
	run := sh.run
	if g.json {
		view := struct {
			Run     runView      `json:"run"`
			Calls   []callView   `json:"calls"`
			Family  familyView   `json:"family"`
			Budget  *budgetsView `json:"budget,omitempty"`
			Bounds  []boundView  `json:"bounds"`
			Waits   []hitch.Wait `json:"waits,omitempty"`
			Sandbox *sandboxView `json:"sandbox,omitempty"`
			// Requests are the run's latest model requests with their
			// context accounts; MoreRequests says earlier ones exist.
			Requests     []hitchtype.ContextRequest `json:"requests"`
			MoreRequests bool                       `json:"more_requests,omitempty"`
			// FamilyCost is what the run's family has cost so far.
			FamilyCost *runningCostView `json:"family_cost"`
		}{runJSON(run), sh.calls, familyView{sh.fam.Runs, sh.fam.Usage, sh.fam.CostUSD}, sh.budget, []boundView{}, sh.waits, sh.sandbox,
			sh.reqs, sh.moreReqs, costJSON(&sh.famCost)}
		if view.Requests == nil {
			view.Requests = []hitchtype.ContextRequest{}
		}
		if view.Calls == nil {
			view.Calls = []callView{}
		}
		for _, c := range sh.bounds {
			view.Bounds = append(view.Bounds, boundView(c))
		}
		b, _ := json.Marshal(view)
		fmt.Fprintf(g.stdout, "%s\n", b)
		return
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
	if fam := sh.fam; fam.Runs > 1 {
		fmt.Fprintf(w, "family   %d runs, tokens in %s, out %s, cost %s\n", fam.Runs, count(fam.Usage.InputTokens), count(fam.Usage.OutputTokens), usd(fam.CostUSD))
	}
	fmt.Fprintf(w, "spent    %s\n", costLine(sh.famCost, "in the family"))
	for _, c := range sh.bounds {
		fmt.Fprintf(w, "budget   %s\n", boundLine(c))
	}
	if sbox := sh.sandbox; sbox != nil {
		if sbox.Isolation != "" {
			fmt.Fprintf(w, "sandbox  commands isolated by %s\n", sbox.Isolation)
		}
		if sbox.Warning != "" {
			fmt.Fprintf(w, "sandbox  WARNING: %s\n", sbox.Warning)
		}
	}
	if len(sh.calls) > 0 {
		fmt.Fprintln(w, "\ncalls")
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		for _, c := range sh.calls {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Call, c.Tool, c.State, clip(c.Detail, 80))
		}
		_ = tw.Flush()
	}
	printContext(w, sh.reqs, sh.moreReqs)
	if run.Status == hitchtype.StatusWaiting {
		printWaits(w, sh.waits, sh.now)
		fmt.Fprintln(w)
		fmt.Fprintln(w, sh.hint)
	}
}

// boundLine says one bounded counter: "family tokens: 120 of 1000 used, 880
// left".
func boundLine(c hitch.BudgetCounter) string {
	scope := "family"
	if c.Scope == "run" {
		scope = "this run"
	}
	name := strings.ReplaceAll(c.Name, "_", " ")
	amount := func(v float64) string {
		switch c.Unit {
		case "usd":
			return fmt.Sprintf("$%.4f", v)
		case "ms":
			return (time.Duration(v) * time.Millisecond).Round(time.Millisecond).String()
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	if c.Used == nil {
		return fmt.Sprintf("%s %s: %s, used not reported", scope, name, amount(c.Limit))
	}
	return fmt.Sprintf("%s %s: %s of %s used, %s left", scope, name, amount(*c.Used), amount(c.Limit), amount(*c.Left))
}

// journalFunc reads a run's journal after a position, at most limit
// entries (0: a default page); more says a following page may hold more.
type journalFunc func(ctx context.Context, after int64, limit int) (es []store.Entry, more bool, err error)

func storeJournal(st store.Store, id string) journalFunc {
	return func(ctx context.Context, after int64, limit int) ([]store.Entry, bool, error) {
		es, err := st.JournalRead(ctx, store.JournalReadParams{RunID: id, After: after, Limit: limit})
		return es, len(es) == cmp.Or(limit, store.DefaultReadLimit), err
	}
}

// waitingHint says what a waiting run waits for and how to move it on.
func waitingHint(ctx context.Context, read journalFunc, run hitch.Run) string {
	var w hitchtype.RunWaiting
	if es, _, err := read(ctx, run.Position-1, 1); err == nil && len(es) == 1 && es[0].Kind == hitchtype.KindRunWaiting {
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
func callsOf(ctx context.Context, now time.Time, read journalFunc) ([]callView, error) {
	var views []callView
	idx := map[string]int{}
	set := func(key, state, detail string) {
		if i, ok := idx[key]; ok {
			views[i].State, views[i].Detail = state, detail
		}
	}
	after := int64(0)
	for {
		es, more, err := read(ctx, after, 0)
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
		if !more || len(es) == 0 {
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
func sandboxOf(ctx context.Context, read journalFunc) (*sandboxView, error) {
	var out *sandboxView
	for after := int64(0); after < maxSandboxScan; {
		es, more, err := read(ctx, after, 500)
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
		if !more || len(es) == 0 {
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
