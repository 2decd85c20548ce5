package store

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hitch-dev/hitch/hitchtype"
)

// The decisions of a run's reads that every driver makes alike; the drivers
// keep the statements.

// CheckCancelRequested checks the parameters of a RunCancelRequested and
// returns its page's limit.
func CheckCancelRequested(p RunCancelRequestedParams) (int, error) {
	switch {
	case p.Owner == "":
		return 0, errors.New("owner is required")
	case p.Limit < 0 || p.Limit > MaxListLimit:
		return 0, fmt.Errorf("limit %d is outside 0..%d", p.Limit, MaxListLimit)
	case p.Limit == 0:
		return MaxListLimit, nil
	}
	return p.Limit, nil
}

// ListStatuses are the statuses a RunList or a count selects, sorted, each
// once: a driver walks its index once for each.
func ListStatuses(p RunListParams) []hitchtype.Status {
	return slices.Compact(slices.Sorted(slices.Values(p.Statuses)))
}

// Counter is a driver's RunCountsFor.
type Counter interface {
	RunCountsFor(ctx context.Context, p RunListParams) (map[hitchtype.Status]int, error)
}

// RunCounts counts runs by status over c's RunCountsFor, of one tenant or,
// with tenant "", of all. Statuses without runs are absent from the map.
func RunCounts(ctx context.Context, c Counter, tenant string) (map[hitchtype.Status]int, error) {
	if err := CheckTenant("tenant", tenant, false); err != nil {
		return nil, fmt.Errorf("run counts: %w", err)
	}
	return c.RunCountsFor(ctx, RunListParams{Tenant: tenant})
}

// CountPlan is how a driver counts the runs RunCountsFor selects.
type CountPlan struct {
	// Params are the filters, without RunList's page (cursor, limit,
	// order), which a count ignores.
	Params RunListParams
	// Kept says that no filter but the tenant is set, so the counts the
	// store keeps answer; Statuses then narrows them when set.
	Kept bool
	// Statuses are the statuses to count: those p names (sorted, each
	// once), or every status when p names none and the count walks the
	// runs (not Kept).
	Statuses []hitchtype.Status
}

// PlanCounts checks a RunCountsFor's filters and says how to count.
func PlanCounts(p RunListParams) (CountPlan, error) {
	p.After, p.Limit, p.Oldest = "", 0, false
	if _, _, err := CheckList(p); err != nil {
		return CountPlan{}, err
	}
	plan := CountPlan{Params: p, Statuses: ListStatuses(p)}
	plan.Kept = p.Agent == "" && p.ParentID == "" && p.RootID == "" && p.CreatedAfter.IsZero() &&
		p.CreatedBefore.IsZero() && len(p.Reasons) == 0 && p.Text == ""
	if !plan.Kept && len(plan.Statuses) == 0 {
		plan.Statuses = hitchtype.Statuses()
	}
	return plan, nil
}
