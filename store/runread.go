package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/hitch-dev/hitch/hitchtype"
)

// The decisions of a run's reads that every driver makes alike; the drivers
// keep the statements.

// CheckCancelRequested checks the ids of a RunCancelRequested.
func CheckCancelRequested(ids []string) error {
	if len(ids) > MaxListLimit {
		return fmt.Errorf("%d ids: at most %d at once", len(ids), MaxListLimit)
	}
	return nil
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

// RunCounts is a Store's RunCounts over its RunCountsFor: the counts of
// one tenant, or of all when tenant is empty.
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
