package hitchtype

import "time"

// Budget limits a family of runs. Zero fields are unlimited.
type Budget struct {
	// Tokens bounds input plus output tokens, as providers report them.
	Tokens int64
	// USD bounds the cost, priced by the model's list price (Config.Prices).
	USD float64
	// ModelCalls bounds model attempts, retries included.
	ModelCalls int64
	// ToolCalls bounds tool bodies run (replays included) and sub-agent
	// starts.
	ToolCalls int64
	// WallTime bounds the time from the root run's start, by the store's
	// clock.
	WallTime time.Duration
}

// RunningCost is what a family of runs, or a session, has cost so far.
type RunningCost struct {
	// USD sums every model reply so far, at the model's price when it
	// came; nil when any is not priced (a model without a price, a reply
	// without usage, a failed or cut-off call, or a reply journaled before
	// replies were priced). A call still in flight is not counted yet.
	USD *float64
	// Runs is how many runs were counted, and Live how many of them have
	// not ended: their cost still grows.
	Runs, Live int
}

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

// FamilyUsage sums a family: a root run and every run below it.
type FamilyUsage struct {
	Runs int
	// Usage sums every run's usage; a counter is nil when any run's is,
	// or when a run has not ended yet.
	Usage Usage
	// CostUSD is nil when any run's cost is unknown or it has not ended.
	CostUSD *float64
}
