package main

import (
	"context"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/client"
	"github.com/hitch-dev/hitch/store"
)

// maxFamilyPages bounds the pages of runs `runs show --server` reads to
// sum a family; a larger family's totals are not reported.
const maxFamilyPages = 10

// remoteRunsShow prints what `hitch runs show` prints, read from the API:
// the run, its calls (from its journal), its family's totals and cost so
// far, its budget and what is left, its sandbox, its context meter and,
// for a waiting run, how to move it on.
func remoteRunsShow(ctx context.Context, r *remote, a []string) error {
	wr, err := r.c.Run(ctx, a[0])
	if err != nil {
		return err
	}
	run := runOf(wr)
	read := remoteJournal(r.c, run.ID)
	sh := shown{run: run, now: time.Now()}
	if sh.calls, err = callsOf(ctx, sh.now, read); err != nil {
		return err
	}
	if sh.fam, err = remoteFamily(ctx, r.c, run.RootID); err != nil {
		return err
	}
	b, err := r.c.Budget(ctx, run.ID)
	if err != nil {
		return err
	}
	for _, c := range b.Counters {
		sh.bounds = append(sh.bounds, hitch.BudgetCounter{Scope: c.Scope, Name: c.Name, Unit: c.Unit, Limit: c.Limit, Used: c.Used, Left: c.Left})
	}
	sh.budget = familyBudgetView(sh.bounds)
	if sh.sandbox, err = sandboxOf(ctx, read); err != nil {
		return err
	}
	rc, err := r.c.RunContext(ctx, run.ID, maxContextRows)
	if err != nil {
		return err
	}
	sh.famCost = hitch.RunningCost{USD: rc.FamilyCost.USD, Runs: rc.FamilyCost.Runs, Live: rc.FamilyCost.Live}
	for _, q := range rc.Requests {
		sh.reqs = append(sh.reqs, contextRequestOf(q))
	}
	sh.moreReqs = rc.More
	if wr.Status == "waiting" {
		sh.hint = waitingHint(ctx, read, run)
	}
	sh.print(r.g)
	return nil
}

func remoteJournal(c *client.Client, id string) journalFunc {
	return func(ctx context.Context, after int64, limit int) ([]store.Entry, bool, error) {
		page, err := c.Journal(ctx, id, after, limit)
		if err != nil {
			return nil, false, err
		}
		es := make([]store.Entry, len(page.Entries))
		for i, e := range page.Entries {
			es[i] = entryOf(e)
		}
		return es, page.Next != nil, nil
	}
}

// remoteFamily sums a family's usage and cost from its runs' outcomes, as
// Runtime.FamilyUsage does: a counter is nil when any run's is, or when a
// run has not ended.
func remoteFamily(ctx context.Context, c *client.Client, rootID string) (hitch.FamilyUsage, error) {
	var f hitch.FamilyUsage
	var in, out, cached int64
	known := [3]bool{true, true, true}
	cost, costKnown := 0.0, true
	add := func(i int, v *int64, sum *int64) {
		if v == nil {
			known[i] = false
		} else {
			*sum += *v
		}
	}
	after := ""
	for pages := 0; ; pages++ {
		if pages == maxFamilyPages {
			known, costKnown = [3]bool{}, false
			break
		}
		page, err := c.Runs(ctx, client.RunFilter{RootID: rootID, After: after, Limit: 1000})
		if err != nil {
			return f, err
		}
		for _, wr := range page.Runs {
			f.Runs++
			o := runOf(wr).Outcome
			if o == nil {
				known, costKnown = [3]bool{}, false
				continue
			}
			f.Usage.Generations += o.Usage.Generations
			add(0, o.Usage.InputTokens, &in)
			add(1, o.Usage.OutputTokens, &out)
			add(2, o.Usage.CachedInputTokens, &cached)
			if o.CostUSD == nil {
				costKnown = false
			} else {
				cost += *o.CostUSD
			}
		}
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	if known[0] {
		f.Usage.InputTokens = &in
	}
	if known[1] {
		f.Usage.OutputTokens = &out
	}
	if known[2] {
		f.Usage.CachedInputTokens = &cached
	}
	if costKnown && f.Runs > 0 {
		f.CostUSD = &cost
	}
	return f, nil
}

// familyBudgetView rebuilds the family budget's limits and use, as the
// local form's JSON gives them, from the bounded family counters; nil
// when the family has none.
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
