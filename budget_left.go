package hitch

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// RunBudget is what bounds a run and what is left of it: the family
// budget its root was started with (shared with every run of the family)
// and the run's own limits.
type RunBudget struct {
	RunID  string
	RootID string
	// Counters are the bounded counters, family first; a counter without
	// a limit is not listed.
	Counters []BudgetCounter
}

// BudgetCounter is one bounded counter: its limit, what is used, and what
// is left.
type BudgetCounter struct {
	// Scope is "family" for the budget a root shares with every run below
	// it, "run" for a limit of this run alone.
	Scope string
	// Name is, for the family: tokens, usd, model_calls, tool_calls,
	// wall_time; for the run: model_attempts, tokens.
	Name string
	// Unit is tokens, usd, calls, ms or attempts.
	Unit  string
	Limit float64
	// Used and Left are nil when the amount is not known: a provider did
	// not report a counter, or (a run's own tokens) the run has not ended.
	// A family's use counts reservations of work in flight.
	Used, Left *float64
}

// budgetScan bounds how far back a run's budget looks in an unfinished
// run's journal for its latest model attempt.
const budgetScan = 200

// Budget returns the budget that bounds a run and what is left of it. The
// run's own limits are listed only when the runtime knows the run's agent
// version (Config.Agents).
func (rt *Runtime) Budget(ctx context.Context, runID string) (RunBudget, error) {
	r, err := rt.cfg.Store.RunGet(ctx, runID)
	if err != nil {
		return RunBudget{}, fmt.Errorf("budget of %s: %w", runID, err)
	}
	run, err := RunOf(r)
	if err != nil {
		return RunBudget{}, fmt.Errorf("budget of %s: %w", runID, err)
	}
	out := RunBudget{RunID: run.ID, RootID: run.RootID, Counters: []BudgetCounter{}}
	limits, used, ok, err := rt.FamilyBudget(ctx, run.RootID)
	if err != nil {
		return RunBudget{}, fmt.Errorf("budget of %s: %w", runID, err)
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
	a, known := rt.agents[agentKey(run.Agent, run.Version)]
	if !known {
		return out, nil
	}
	lim := a.Limits()
	attempts, err := rt.attemptsOf(ctx, run)
	if err != nil {
		return RunBudget{}, fmt.Errorf("budget of %s: %w", runID, err)
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

func counter(scope, name, unit string, limit float64, used *float64) BudgetCounter {
	c := BudgetCounter{Scope: scope, Name: name, Unit: unit, Limit: limit, Used: used}
	if used != nil {
		c.Left = refOf(max(limit-*used, 0))
	}
	return c
}

func refOf[T any](v T) *T { return &v }

// attemptsOf counts a run's model attempts: from its outcome once it has
// ended, else from its latest model.attempt entry among the last
// budgetScan; nil when that entry is further back.
func (rt *Runtime) attemptsOf(ctx context.Context, run Run) (*float64, error) {
	if run.Outcome != nil {
		return refOf(float64(run.Outcome.Attempts)), nil
	}
	after := max(run.Position-budgetScan, 0)
	es, err := rt.cfg.Store.JournalRead(ctx, store.JournalReadParams{RunID: run.ID, After: after, Limit: budgetScan})
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
