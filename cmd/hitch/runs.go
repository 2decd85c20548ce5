package main

import (
	"context"
	"encoding/json"
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
	var status []string
	var pg page
	var agent, text, since, until string
	list := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first (--after pages on)",
		Long: "List runs newest first, filtered by tenant, agent, status, creation time and text. When the page is full, the cursor of the\n" +
			"next page is printed on stderr; pass it to --after.",
		Args: args(0, "no arguments"),
		PreRunE: func(*cobra.Command, []string) error {
			if err := pg.check(); err != nil {
				return err
			}
			if pg.after != "" {
				if _, err := store.ParseRunCursor(pg.after); err != nil {
					return usageError{fmt.Errorf("--after: %w", err)}
				}
			}
			for _, s := range status {
				if !hitchtype.Status(s).Valid() {
					return usageError{fmt.Errorf("--status %q: want queued, running, waiting, completed, failed, cancelled, answer_invalid or budget_exhausted", s)}
				}
			}
			_, _, err := runsWindow(since, until, time.Now())
			return err
		},
		RunE: withBackend(g, needStore, func(ctx context.Context, v *verb, _ []string) error {
			p := hitch.RunsParams{Tenant: pg.tenant, Agent: agent, After: pg.after, Limit: pg.limit, Text: text}
			var err error
			if p.CreatedAfter, p.CreatedBefore, err = runsWindow(since, until, time.Now()); err != nil {
				return err
			}
			for _, s := range status {
				p.Statuses = append(p.Statuses, hitchtype.Status(s))
			}
			runs, next, err := v.b.Runs(ctx, p)
			if err != nil {
				return err
			}
			if next != "" {
				defer fmt.Fprintf(g.stderr, "more: --after %s\n", next)
			}
			return printList(v, runs, func(r hitch.Run) any { return runJSON(r) }, "ID\tTENANT\tAGENT\tSTATUS\tSTEPS\tUPDATED\tFORKED FROM",
				func(r hitch.Run) string {
					return fmt.Sprintf("%s\t%s\t%s v%d\t%s\t%d\t%s\t%s", r.ID, r.Tenant, r.Agent, r.Version, r.Status, r.Position,
						r.UpdatedAt.Local().Format(time.DateTime), or(forkedText(r.ForkedFrom), "-"))
				})
		}),
	}
	list.Flags().StringSliceVar(&status, "status", nil, "only runs with these statuses")
	pg.flags(list, "the cursor a previous page printed: list the runs after it", 50, "runs")
	list.Flags().StringVar(&agent, "agent", "", "only runs of this agent")
	list.Flags().StringVar(&text, "text", "", "only runs whose id, agent or input's head contains this (ignoring ASCII case)")
	list.Flags().StringVar(&since, "since", "", "only runs created at or after this: an RFC 3339 time, or a duration ago (2h)")
	list.Flags().StringVar(&until, "until", "", "only runs created before this: an RFC 3339 time, or a duration ago")

	show := leaf{"show RUN", "Show a run: status, outcome, usage, and its calls", args(1, "one RUN id"), needStore, showRun}.build(g)

	var after int64
	var follow bool
	events := &cobra.Command{
		Use:   "events RUN",
		Short: "Print a run's journal from an offset, optionally following it",
		Args:  args(1, "one RUN id"),
		PreRunE: func(*cobra.Command, []string) error {
			if after < 0 {
				return usageError{fmt.Errorf("--after %d: want 0 (from the start) or a position", after)}
			}
			return nil
		},
		RunE: withBackend(g, needStore, func(ctx context.Context, v *verb, a []string) error {
			return printJournal(ctx, v, a[0], after, follow)
		}),
	}
	events.Flags().Int64Var(&after, "after", 0, "print entries after this position")
	events.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new entries until the run ends")
	return group("runs", "List and inspect runs", list, show, events, newRunsFork(g))
}

// printJournal prints a run's journal after a position, and with follow
// the entries journaled after, until the run ends or ctx does.
func printJournal(ctx context.Context, v *verb, id string, after int64, follow bool) error {
	v.out.following(id)
	if _, err := v.b.Run(ctx, id); err != nil {
		return err
	}
	if follow {
		for e, err := range v.b.Follow(ctx, id, after) {
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			v.out.entry(e)
		}
		return nil
	}
	for {
		es, more, err := v.b.Journal(ctx, id, after, 0)
		if err != nil {
			return err
		}
		for _, e := range es {
			v.out.entry(e)
			after = e.Pos
		}
		if !more || len(es) == 0 {
			return nil
		}
	}
}

// showRun prints what `hitch runs show` reports of a run.
func showRun(ctx context.Context, v *verb, a []string) error {
	run, err := v.b.Run(ctx, a[0])
	if err != nil {
		return err
	}
	read := func(ctx context.Context, after int64, limit int) ([]store.Entry, bool, error) {
		return v.b.Journal(ctx, run.ID, after, limit)
	}
	sh := shown{run: run, now: time.Now()}
	if sh.calls, err = callsOf(ctx, sh.now, read); err != nil {
		return err
	}
	if sh.fam, err = v.b.FamilyUsage(ctx, run.RootID); err != nil {
		return err
	}
	b, err := v.b.Budget(ctx, run.ID)
	if err != nil {
		return err
	}
	sh.bounds = b.Counters
	sh.budget = familyBudgetView(sh.bounds)
	if sh.sandbox, err = sandboxOf(ctx, read); err != nil {
		return err
	}
	rc, err := v.b.RunContext(ctx, run.ID, maxContextRows)
	if err != nil {
		return err
	}
	sh.reqs, sh.moreReqs, sh.famCost = rc.Requests, rc.More, rc.FamilyCost
	if run.Status == hitchtype.StatusWaiting {
		if sh.waits, err = v.b.Waits(ctx, run.ID); err != nil {
			return err
		}
		sh.hint = waitingHint(ctx, read, run)
	}
	sh.print(v.g)
	return nil
}

// familyBudgetView is the family budget's limits and use, as runs show
// --json gives them, from the family's bounded counters (a counter
// without a limit reads 0); nil when the family has no budget.
func familyBudgetView(bounds []hitch.BudgetCounter) *budgetsView {
	var v budgetsView
	has := false
	for _, c := range bounds {
		if c.Scope != "family" {
			continue
		}
		has = true
		used := 0.0
		if c.Used != nil {
			used = *c.Used
		}
		switch c.Name {
		case "tokens":
			v.Limits.Tokens, v.Used.Tokens = int64(c.Limit), int64(used)
		case "usd":
			v.Limits.USD, v.Used.USD = c.Limit, used
		case "model_calls":
			v.Limits.ModelCalls, v.Used.ModelCalls = int64(c.Limit), int64(used)
		case "tool_calls":
			v.Limits.ToolCalls, v.Used.ToolCalls = int64(c.Limit), int64(used)
		case "wall_time":
			v.Limits.WallMS, v.Used.WallMS = int64(c.Limit), int64(used)
		}
	}
	if !has {
		return nil
	}
	return &v
}

// shown is what `hitch runs show` reports of a run.
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
	if f := forkedText(run.ForkedFrom); f != "" {
		fmt.Fprintf(w, "forked   from %s (hitch runs events %s)\n", f, run.ForkedFrom.Run)
	}
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
				d := decoded[hitchtype.CallDecided](e.Data)
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
				d := decoded[hitchtype.ApprovalAnswer](e.Data)
				set(d.Call, map[string]string{hitchtype.KindApprovalGrant: "approved", hitchtype.KindApprovalDeny: "rejected"}[e.Kind], d.By)
			case hitchtype.KindApprovalLapse:
				d := decoded[hitchtype.ApprovalExpired](e.Data)
				set(d.Call, "expired", "approval deadline "+d.ExpiredAt.UTC().Format(time.RFC3339))
			case hitchtype.KindCallRejected:
				d := decoded[hitchtype.CallRejected](e.Data)
				set(d.Call, "rejected", d.Error)
			case hitchtype.KindCallStarted:
				d := decoded[hitchtype.CallStarted](e.Data)
				set(d.Call, "started", fmt.Sprintf("attempt %d", d.Attempt))
			case hitchtype.KindCallSettled:
				d := decoded[hitchtype.CallSettled](e.Data)
				set(d.Call, "settled", d.Output)
			case hitchtype.KindCallFailed:
				d := decoded[hitchtype.CallFailed](e.Data)
				set(d.Call, "failed", d.Error)
			case hitchtype.KindCallUncertain:
				d := decoded[hitchtype.CallUncertain](e.Data)
				set(d.Call, "uncertain", d.Reason)
			case hitchtype.KindWakeArmed, hitchtype.KindWakeDelivered, hitchtype.KindWakeExpired,
				hitchtype.KindCallPending, hitchtype.KindCallCompleted, hitchtype.KindCallTimedOut:
				key, state, detail := waitState(e)
				set(key, state, detail)
			case hitchtype.KindCallReconcile:
				d := decoded[hitchtype.CallReconciled](e.Data)
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
