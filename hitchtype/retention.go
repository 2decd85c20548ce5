package hitchtype

import "time"

// PruneParams are the parameters of a prune (hitch.Runtime.Prune).
type PruneParams struct {
	// OlderThan: families whose every run was last updated longer ago
	// than this, by the store's clock. Default Config.Retention.
	OlderThan time.Duration
	// Batch bounds the families of one transaction: 1 to 1000; default
	// Config.PruneBatch.
	Batch int
	// MaxBatches bounds the transactions; 0 means until nothing is left.
	MaxBatches int
	// DryRun deletes nothing and lists (up to one batch of) what would go.
	DryRun bool
}

// PruneResult is what a prune deleted, or would delete.
type PruneResult struct {
	// Roots are the pruned families' root runs, oldest first.
	Roots []string
	// Runs counts the runs of those families.
	Runs int64
	// Keys counts the expired session idempotency keys deleted.
	Keys int
	// Before is the cut, by the store's clock.
	Before time.Time
}
