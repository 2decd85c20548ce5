// Package usage answers what runs, families and sessions have used and
// cost, and what bounds them: read from the store's runs, journals and
// family budgets, never from memory, so every node answers alike.
package usage

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// Store is what usage reads of a store.
type Store interface {
	Now(ctx context.Context) (time.Time, error)
	RunGet(ctx context.Context, id string) (store.Run, error)
	JournalRead(ctx context.Context, p store.JournalReadParams) ([]store.Entry, error)
	BudgetGet(ctx context.Context, rootID string) (limits, used store.Budget, ok bool, err error)
}

// Reader answers usage questions.
type Reader struct {
	Store Store
	// Family lists a family's runs: a root and every run below it.
	Family func(ctx context.Context, rootID string) ([]store.Run, error)
	// Limits returns the limits of a registered agent version.
	Limits func(agent string, version int) (hitchtype.Limits, bool)
}

// budgetScan bounds how far back a run's budget looks in an unfinished
// run's journal for its latest model attempt.
const budgetScan = 200

// ContextRequests returns a run's model requests, oldest first, reading
// the journal in bounded pages.
func (u Reader) ContextRequests(ctx context.Context, runID string) ([]hitchtype.ContextRequest, error) {
	var f hitchtype.ContextFold
	for after := int64(0); ; {
		es, err := u.Store.JournalRead(ctx, store.JournalReadParams{RunID: runID, After: after, Limit: store.DefaultReadLimit})
		if err != nil {
			return nil, fmt.Errorf("context requests of %s: %w", runID, err)
		}
		for _, e := range es {
			if err := f.Add(e.Kind, e.Data); err != nil {
				return nil, fmt.Errorf("context requests of %s: entry %d: %w", runID, e.Pos, err)
			}
		}
		if len(es) < store.DefaultReadLimit {
			return f.Requests(), nil
		}
		after = es[len(es)-1].Pos
	}
}

// LatestContextRequests returns up to n of a run's latest model requests,
// oldest first; more reports that earlier ones exist. It reads the journal
// backwards from its end a page at a time and stops once it holds n+1
// requests.
func (u Reader) LatestContextRequests(ctx context.Context, runID string, n int) (reqs []hitchtype.ContextRequest, more bool, err error) {
	if n < 1 {
		return nil, false, fmt.Errorf("latest context requests of %s: n %d: want at least 1", runID, n)
	}
	run, err := u.Store.RunGet(ctx, runID)
	if err != nil {
		return nil, false, fmt.Errorf("latest context requests of %s: %w", runID, err)
	}
	var pages [][]store.Entry
	seen := 0
	for from := run.Position; from > 0 && seen <= n; {
		after := max(0, from-int64(store.DefaultReadLimit))
		es, err := u.Store.JournalRead(ctx, store.JournalReadParams{RunID: runID, After: after, Limit: int(from - after)})
		if err != nil {
			return nil, false, fmt.Errorf("latest context requests of %s: %w", runID, err)
		}
		for _, e := range es {
			if e.Kind == hitchtype.KindModelAttempt {
				seen++
			}
		}
		pages = append(pages, es)
		from = after
	}
	var f hitchtype.ContextFold
	for i := len(pages) - 1; i >= 0; i-- {
		for _, e := range pages[i] {
			if err := f.Add(e.Kind, e.Data); err != nil {
				return nil, false, fmt.Errorf("latest context requests of %s: entry %d: %w", runID, e.Pos, err)
			}
		}
	}
	reqs = f.Requests()
	if len(reqs) > n {
		return reqs[len(reqs)-n:], true, nil
	}
	return reqs, false, nil
}

// addCost adds o to c: USD is nil once either is.
func addCost(c *hitchtype.RunningCost, o hitchtype.RunningCost) {
	if c.Runs == 0 {
		c.USD = o.USD
	} else if c.USD != nil && o.USD != nil {
		v := *c.USD + *o.USD
		c.USD = &v
	} else {
		c.USD = nil
	}
	c.Runs += o.Runs
	c.Live += o.Live
}

// FamilyCost sums what a family has cost so far: an ended run's outcome, a
// live run's replies as its journal holds them.
func (u Reader) FamilyCost(ctx context.Context, rootID string) (hitchtype.RunningCost, error) {
	rs, err := u.Family(ctx, rootID)
	if err != nil {
		return hitchtype.RunningCost{}, fmt.Errorf("family cost of %s: %w", rootID, err)
	}
	var total hitchtype.RunningCost
	for _, r := range rs {
		one := hitchtype.RunningCost{Runs: 1}
		run, err := store.RunOf(r)
		if err != nil {
			return hitchtype.RunningCost{}, err
		}
		if run.Outcome != nil {
			one.USD = run.Outcome.CostUSD
		} else {
			one.Live = 1
			reqs, err := u.ContextRequests(ctx, r.ID)
			if err != nil {
				return hitchtype.RunningCost{}, fmt.Errorf("family cost of %s: %w", rootID, err)
			}
			one.USD = hitchtype.CostSoFar(reqs)
		}
		addCost(&total, one)
	}
	return total, nil
}

// SessionCost sums what a session has cost so far: the family of every
// submission's run, the one at work included.
func (u Reader) SessionCost(ctx context.Context, st hitchtype.SessionStatus) (hitchtype.RunningCost, error) {
	zero := 0.0
	total := hitchtype.RunningCost{USD: &zero}
	for _, sub := range st.Submissions {
		if sub.RunID == "" {
			continue
		}
		c, err := u.FamilyCost(ctx, sub.RunID)
		if err != nil {
			return hitchtype.RunningCost{}, fmt.Errorf("session cost of %s: %w", st.Session.ID, err)
		}
		addCost(&total, c)
	}
	return total, nil
}

// FamilyUsage sums the usage and cost of a family, from the outcomes of
// all its runs.
func (u Reader) FamilyUsage(ctx context.Context, rootID string) (hitchtype.FamilyUsage, error) {
	rs, err := u.Family(ctx, rootID)
	if err != nil {
		return hitchtype.FamilyUsage{}, fmt.Errorf("family usage of %s: %w", rootID, err)
	}
	var f hitchtype.FamilyUsage
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
	for _, r := range rs {
		f.Runs++
		run, err := store.RunOf(r)
		if err != nil {
			return hitchtype.FamilyUsage{}, err
		}
		if run.Outcome == nil {
			known, costKnown = [3]bool{}, false
			continue
		}
		u := run.Outcome.Usage
		f.Usage.Generations += u.Generations
		add(0, u.InputTokens, &in)
		add(1, u.OutputTokens, &out)
		add(2, u.CachedInputTokens, &cached)
		if run.Outcome.CostUSD == nil {
			costKnown = false
		} else {
			cost += *run.Outcome.CostUSD
		}
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

// FamilyBudget returns a root run's budget limits and what its family has
// used; ok is false when it has none. The wall time used runs from the
// root's start to the store's clock now, or to the root's end.
func (u Reader) FamilyBudget(ctx context.Context, rootID string) (limits, used hitchtype.Budget, ok bool, err error) {
	l, use, ok, err := u.Store.BudgetGet(ctx, rootID)
	if err != nil || !ok {
		if err != nil {
			err = fmt.Errorf("family budget of %s: %w", rootID, err)
		}
		return limits, used, ok, err
	}
	root, err := u.Store.RunGet(ctx, rootID)
	if err != nil {
		return limits, used, ok, fmt.Errorf("family budget of %s: %w", rootID, err)
	}
	end := root.UpdatedAt
	if !root.Status.Terminal() {
		if end, err = u.Store.Now(ctx); err != nil {
			return limits, used, ok, fmt.Errorf("family budget of %s: read store clock: %w", rootID, err)
		}
	}
	used = budgetOf(use)
	used.WallTime = max(end.Sub(root.CreatedAt), 0)
	return budgetOf(l), used, true, nil
}

// budgetOf speaks a stored budget in the units of hitchtype.Budget.
func budgetOf(b store.Budget) hitchtype.Budget {
	return hitchtype.Budget{Tokens: b.Tokens, USD: float64(b.MicroUSD) / 1e6, ModelCalls: b.ModelCalls, ToolCalls: b.ToolCalls,
		WallTime: time.Duration(b.WallMS) * time.Millisecond}
}

// Budget returns the budget that bounds a run and what is left of it. The
// run's own limits are listed only when its agent version is registered.
func (u Reader) Budget(ctx context.Context, runID string) (hitchtype.RunBudget, error) {
	r, err := u.Store.RunGet(ctx, runID)
	if err != nil {
		return hitchtype.RunBudget{}, fmt.Errorf("budget of %s: %w", runID, err)
	}
	run, err := store.RunOf(r)
	if err != nil {
		return hitchtype.RunBudget{}, fmt.Errorf("budget of %s: %w", runID, err)
	}
	out := hitchtype.RunBudget{RunID: run.ID, RootID: run.RootID, Counters: []hitchtype.BudgetCounter{}}
	limits, used, ok, err := u.FamilyBudget(ctx, run.RootID)
	if err != nil {
		return hitchtype.RunBudget{}, fmt.Errorf("budget of %s: %w", runID, err)
	}
	if ok {
		add := func(name, unit string, limit, use float64) {
			if limit > 0 {
				out.Counters = append(out.Counters, counter("family", name, unit, limit, &use))
			}
		}
		add("tokens", "tokens", float64(limits.Tokens), float64(used.Tokens))
		add("usd", "usd", limits.USD, used.USD)
		add("model_calls", "calls", float64(limits.ModelCalls), float64(used.ModelCalls))
		add("tool_calls", "calls", float64(limits.ToolCalls), float64(used.ToolCalls))
		add("wall_time", "ms", float64(limits.WallTime.Milliseconds()), float64(used.WallTime.Milliseconds()))
	}
	lim, known := u.Limits(run.Agent, run.Version)
	if !known {
		return out, nil
	}
	attempts, err := u.attemptsOf(ctx, run)
	if err != nil {
		return hitchtype.RunBudget{}, fmt.Errorf("budget of %s: %w", runID, err)
	}
	out.Counters = append(out.Counters, counter("run", "model_attempts", "attempts", float64(lim.ModelAttempts), attempts))
	if lim.MaxTokens > 0 {
		var tokens *float64
		if o := run.Outcome; o != nil && o.Usage.InputTokens != nil && o.Usage.OutputTokens != nil {
			tokens = refOf(float64(*o.Usage.InputTokens + *o.Usage.OutputTokens))
		}
		out.Counters = append(out.Counters, counter("run", "tokens", "tokens", float64(lim.MaxTokens), tokens))
	}
	return out, nil
}

func counter(scope, name, unit string, limit float64, used *float64) hitchtype.BudgetCounter {
	c := hitchtype.BudgetCounter{Scope: scope, Name: name, Unit: unit, Limit: limit, Used: used}
	if used != nil {
		c.Left = refOf(max(limit-*used, 0))
	}
	return c
}

func refOf[T any](v T) *T { return &v }

// attemptsOf counts a run's model attempts: from its outcome once it has
// ended, else from its latest model.attempt entry among the last
// budgetScan; nil when that entry is further back.
func (u Reader) attemptsOf(ctx context.Context, run hitchtype.Run) (*float64, error) {
	if run.Outcome != nil {
		return refOf(float64(run.Outcome.Attempts)), nil
	}
	after := max(run.Position-budgetScan, 0)
	es, err := u.Store.JournalRead(ctx, store.JournalReadParams{RunID: run.ID, After: after, Limit: budgetScan})
	if err != nil {
		return nil, err
	}
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].Kind != hitchtype.KindModelAttempt {
			continue
		}
		var d hitchtype.ModelAttempt
		if err := json.Unmarshal(es[i].Data, &d); err != nil {
			return nil, fmt.Errorf("entry %d: %w", es[i].Pos, err)
		}
		return refOf(float64(d.Attempt)), nil
	}
	if after == 0 {
		return refOf(0.0), nil
	}
	return nil, nil
}
