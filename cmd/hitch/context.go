package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model"
)

// maxContextRows bounds the model requests `runs show` lists; the
// latest are kept.
const maxContextRows = 20

// printContext prints the meter of a run's latest model request, then a
// line for each request.
func printContext(w io.Writer, reqs []hitchtype.ContextRequest, more bool) {
	if len(reqs) == 0 {
		return
	}
	last := reqs[len(reqs)-1]
	fmt.Fprintf(w, "\ncontext  latest model request: attempt %d, turn %d%s\n", last.Attempt, last.Turn, purpose(last.Purpose))
	printMeter(w, last)
	if len(reqs) < 2 {
		return
	}
	fmt.Fprintln(w, "\nrequests")
	if more {
		fmt.Fprintf(w, "  (the latest %d; earlier requests are not listed)\n", len(reqs))
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  ATTEMPT\tTURN\tPURPOSE\tESTIMATE\tFILL\tINPUT\tOUTPUT\tCOST\tMODEL")
	for _, r := range reqs {
		est, fill := "not accounted", "-"
		if a := r.Context; a != nil {
			est = fmt.Sprint(a.Estimate)
			if pct, ok := a.Fill(); ok {
				fill = fmt.Sprintf("%.1f%%", pct)
			}
		}
		in, out := reported(r)
		cost := "not priced"
		switch {
		case r.Result == "":
			cost = "-"
		case r.CostUSD != nil:
			cost = fmt.Sprintf("$%.6f", *r.CostUSD)
		}
		fmt.Fprintf(tw, "  %d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Attempt, r.Turn, or(r.Purpose, "turn"), est, fill, in, out, cost, or(r.Model, "-"))
	}
	_ = tw.Flush()
}

// printMeter prints one request's account: the window, the estimate and
// its fill, a bar, the categories that hold tokens, and the provider's
// count.
func printMeter(w io.Writer, r hitchtype.ContextRequest) {
	a := r.Context
	if a == nil {
		fmt.Fprintln(w, "  not accounted (journaled before hitch kept context accounts)")
	} else {
		window := "not set (nothing is compacted)"
		if a.Window > 0 {
			window = fmt.Sprintf("%d tokens", a.Window)
		}
		fmt.Fprintf(w, "  window     %s\n", window)
		fill := ""
		if pct, ok := a.Fill(); ok {
			fill = fmt.Sprintf(", %.1f%% of the window", pct)
		}
		fmt.Fprintf(w, "  estimate   %d tokens%s (estimator %s)\n", a.Estimate, fill, a.Estimator)
		if a.Window > 0 {
			fmt.Fprintf(w, "  meter      [%s]\n", bar(a, 40))
		}
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		for _, c := range a.Categories.List() {
			if c.Tokens > 0 {
				fmt.Fprintf(tw, "    %s\t%d\n", c.Label, c.Tokens)
			}
		}
		_ = tw.Flush()
	}
	in, out := reported(r)
	fmt.Fprintf(w, "  reported   input %s, output %s\n", in, out)
}

// reported says what the provider counted for a request: "not reported"
// when it gave nothing, never 0.
func reported(r hitchtype.ContextRequest) (in, out string) {
	switch {
	case r.Result == "":
		return "pending", "pending"
	case r.Usage == nil:
		return "not reported", "not reported"
	}
	return tokensOr(r.Usage.InputTokens), tokensOr(r.Usage.OutputTokens)
}

func tokensOr(v *int64) string {
	if v == nil {
		return "not reported"
	}
	return fmt.Sprint(*v)
}

func purpose(p string) string {
	if p == "" {
		return ""
	}
	return " (" + p + ")"
}

// bar draws a's fill of its window in width cells: # for the estimate,
// . for the room left.
func bar(a *hitchtype.ContextAccount, width int) string {
	n := int(min(int64(width)*a.Estimate/max(a.Window, 1), int64(width)))
	if a.Estimate > 0 && n == 0 {
		n = 1
	}
	return strings.Repeat("#", n) + strings.Repeat(".", width-n)
}

// runningCostView is a family's or a session's cost so far, as --json
// reports it: usd is null when not priced.
type runningCostView struct {
	USD  *float64 `json:"usd"`
	Runs int      `json:"runs"`
	Live int      `json:"live"`
}

func costJSON(c *hitch.RunningCost) *runningCostView {
	if c == nil {
		return nil
	}
	return &runningCostView{USD: c.USD, Runs: c.Runs, Live: c.Live}
}

// costLine says what a family or session (where) has cost so far.
func costLine(c hitch.RunningCost, where string) string {
	runs := fmt.Sprintf("%d runs %s", c.Runs, where)
	if c.Runs == 1 {
		runs = "1 run " + where
	}
	if c.Live > 0 {
		runs += fmt.Sprintf(", %d still running", c.Live)
	}
	if c.USD == nil {
		return "not priced (a model without a price, or a call that reported no usage); " + runs
	}
	return fmt.Sprintf("$%.6f so far; %s", *c.USD, runs)
}

func contextRequestOf(q api.ContextRequest) hitchtype.ContextRequest {
	out := hitchtype.ContextRequest{Attempt: q.Attempt, Turn: q.Turn, Purpose: q.Purpose, Model: q.Model, Result: q.Result, CostUSD: q.CostUSD}
	if a := q.Context; a != nil {
		c := a.Categories
		out.Context = &hitchtype.ContextAccount{Estimator: a.Estimator, Window: a.Window, Estimate: a.Estimate, Categories: hitchtype.ContextCategories{
			System: c.System, Agent: c.Agent, Run: c.Run, Hook: c.Hook, Tools: c.Tools, User: c.User, Assistant: c.Assistant,
			ToolResults: c.ToolResults, Summary: c.Summary, AnswerSchema: c.AnswerSchema}}
	}
	if u := q.Usage; u != nil {
		out.Usage = &model.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedInputTokens: u.CachedInputTokens}
	}
	return out
}
