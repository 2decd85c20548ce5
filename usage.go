package hitch

import (
	"context"

	"github.com/hitch-dev/hitch/hitchtype"
)

// Usage, cost and budgets: the types are hitchtype's.
type (
	// RunningCost is what a family of runs, or a session, has cost so far.
	RunningCost = hitchtype.RunningCost
	// RunBudget is what bounds a run and what is left of it.
	RunBudget = hitchtype.RunBudget
	// BudgetCounter is one bounded counter: its limit, what is used, and
	// what is left.
	BudgetCounter = hitchtype.BudgetCounter
	// FamilyUsage sums a family: a root run and every run below it.
	FamilyUsage = hitchtype.FamilyUsage
)

// ContextRequests returns a run's model requests, oldest first: the
// context account of each (where its tokens sat, the window, the
// estimator), what the provider reported and what it cost. The journal is
// read in bounded pages.
func (rt *Runtime) ContextRequests(ctx context.Context, runID string) ([]hitchtype.ContextRequest, error) {
	return rt.n.Usage.ContextRequests(ctx, runID)
}

// LatestContextRequests returns up to n of a run's latest model
// requests, oldest first, as ContextRequests does; more reports that
// earlier ones exist. It reads the journal backwards from its end a page
// at a time and stops once it holds n+1 requests, so a long journal costs
// what its last turns hold.
func (rt *Runtime) LatestContextRequests(ctx context.Context, runID string, n int) (reqs []hitchtype.ContextRequest, more bool, err error) {
	return rt.n.Usage.LatestContextRequests(ctx, runID, n)
}

// FamilyCost sums what a family (a root run and every run below it) has
// cost so far: an ended run's outcome, a live run's replies as its
// journal holds them.
func (rt *Runtime) FamilyCost(ctx context.Context, rootID string) (RunningCost, error) {
	return rt.n.Usage.FamilyCost(ctx, rootID)
}

// Budget returns the budget that bounds a run and what is left of it. The
// run's own limits are listed only when the runtime knows the run's agent
// version (Config.Agents).
func (rt *Runtime) Budget(ctx context.Context, runID string) (RunBudget, error) {
	return rt.n.Usage.Budget(ctx, runID)
}

// FamilyUsage sums the usage and cost of a family, from the outcomes of
// all its runs (read a parent's children at a time, in bounded pages).
func (rt *Runtime) FamilyUsage(ctx context.Context, rootID string) (FamilyUsage, error) {
	return rt.n.Usage.FamilyUsage(ctx, rootID)
}

// FamilyBudget returns a root run's budget limits and what its family has
// used, in the units of Spec.Budget; ok is false when it has none. The
// wall time used runs from the root's start to the store's clock now, or
// to the root's end.
func (rt *Runtime) FamilyBudget(ctx context.Context, rootID string) (limits, used Budget, ok bool, err error) {
	return rt.n.Usage.FamilyBudget(ctx, rootID)
}
