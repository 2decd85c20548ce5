package hitch

import (
	"context"
	"fmt"
	"time"

	"github.com/hitch-dev/hitch/store"
)

// Defaults of retention.
const (
	// DefaultRetention is how long a settled family is kept after its
	// last run's last change before the leader prunes it.
	DefaultRetention = 30 * 24 * time.Hour
	// DefaultPruneEvery is how often the leader prunes.
	DefaultPruneEvery = time.Minute
	// DefaultPruneBatch is how many families one prune transaction
	// deletes, and how many expired session keys.
	DefaultPruneBatch = store.DefaultPruneLimit
	// MaxPruneBatches bounds the batches of one pass of the leader's
	// pruning; what is left waits for the next pass.
	MaxPruneBatches = 10
)

// PruneParams are the parameters of Prune.
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

// PruneResult is what Prune deleted, or would delete.
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

// Prune deletes settled families older than p.OlderThan — a root run with
// every run below it, their journals and budget — in batches of one
// transaction each, and expired session idempotency keys. A family with a
// run that is not terminal, or with a run that changed since the cut, is
// kept whole; so are the runs of sessions' submissions. A pruned run is
// gone: Get and Journal answer ErrNotFound. The leader prunes by itself
// (see Lead); Prune is for operators (hitch prune).
func (rt *Runtime) Prune(ctx context.Context, p PruneParams) (PruneResult, error) {
	if p.OlderThan == 0 {
		p.OlderThan = rt.cfg.Retention
	}
	if p.Batch == 0 {
		p.Batch = rt.cfg.PruneBatch
	}
	switch {
	case p.OlderThan < 0:
		return PruneResult{}, fmt.Errorf("prune: older than %s: want more than 0", p.OlderThan)
	case p.Batch < 1 || p.Batch > store.MaxPruneLimit:
		return PruneResult{}, fmt.Errorf("prune: batch %d: want 1 to %d", p.Batch, store.MaxPruneLimit)
	case p.MaxBatches < 0:
		return PruneResult{}, fmt.Errorf("prune: max batches %d: want 0 (no bound) or more", p.MaxBatches)
	}
	now, err := rt.cfg.Store.Now(ctx)
	if err != nil {
		return PruneResult{}, fmt.Errorf("prune: read store clock: %w", err)
	}
	res := PruneResult{Before: now.Add(-p.OlderThan)}
	for i := 0; p.MaxBatches == 0 || i < p.MaxBatches; i++ {
		r, err := rt.cfg.Store.RunPrune(ctx, store.RunPruneParams{Before: res.Before, Limit: p.Batch, DryRun: p.DryRun})
		if err != nil {
			return res, fmt.Errorf("prune: %w", err)
		}
		res.Roots = append(res.Roots, r.Roots...)
		res.Runs += r.Runs
		if p.DryRun || len(r.Roots) < p.Batch {
			break
		}
	}
	for i := 0; !p.DryRun && (p.MaxBatches == 0 || i < p.MaxBatches); i++ {
		n, err := rt.cfg.Store.SessionKeyPrune(ctx, p.Batch)
		if err != nil {
			return res, fmt.Errorf("prune: %w", err)
		}
		res.Keys += n
		if n < p.Batch {
			break
		}
	}
	return res, nil
}

// retain prunes while this node leads, every Config.PruneEvery, at most
// MaxPruneBatches a pass, until ctx ends. It reports errors to OnEvent
// and goes on.
func (rt *Runtime) retain(ctx context.Context, tick <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
		if !rt.IsLeader() || rt.cfg.Retention == Infinite {
			continue
		}
		_, err := rt.Prune(ctx, PruneParams{MaxBatches: MaxPruneBatches})
		if err != nil && ctx.Err() == nil && rt.cfg.OnEvent != nil {
			rt.cfg.OnEvent(Event{Err: fmt.Errorf("retention: %w", err)})
		}
		if rt.testPruned != nil {
			rt.testPruned <- err
		}
	}
}
