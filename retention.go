package hitch

import (
	"context"

	"github.com/hitch-dev/hitch/hitchtype"
)

// PruneParams are the parameters of Prune (see hitchtype.PruneParams).
type PruneParams = hitchtype.PruneParams

// PruneResult is what Prune deleted, or would delete.
type PruneResult = hitchtype.PruneResult

// Prune deletes settled families older than p.OlderThan — a root run with
// every run below it, their journals and budget — in batches of one
// transaction each, and expired session idempotency keys. A family with a
// run that is not terminal, or with a run that changed since the cut, is
// kept whole; so are the runs of sessions' submissions. A pruned run is
// gone: Get and Journal answer ErrNotFound. The leader prunes by itself
// (see Lead); Prune is for operators (hitch prune).
func (rt *Runtime) Prune(ctx context.Context, p PruneParams) (PruneResult, error) {
	return rt.n.Pruner.Prune(ctx, p)
}
