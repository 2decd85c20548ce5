package hitch

import (
	"context"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/engine"
	"github.com/hitch-dev/hitch/internal/node"
)

// ErrBadFork refuses a fork whose position or options do not fit the run
// forked: a position outside its journal or at its end, an edited reply at
// a position that holds no model reply.
var ErrBadFork = engine.ErrBadFork

// ErrUnknownModel refuses a fork told to go on with a model the runtime
// does not know (ForkOptions.Model); it comes with ErrBadFork.
var ErrUnknownModel = engine.ErrUnknownModel

// ForkOptions adjust Fork; see hitchtype.ForkOptions.
type ForkOptions = hitchtype.ForkOptions

// Fork creates a new run whose history is runID's journal up to position
// at (1 copies only its start), and drives it from there. The history is
// copied, never acted on again: a call settled before at is not run again,
// and a call started and not settled at at is an uncertain effect in the
// fork, exactly as recovery after a crash would see it (run again only
// when its tool is replayable). The fork's run.started names its source
// (ForkedFrom); it is a root run with its own family and budget, in the
// source's tenant. Files are not in the journal: the fork works on the
// workspace as it is now, not as it was at at.
func (rt *Runtime) Fork(ctx context.Context, runID string, at int64, opts ForkOptions) (StartResult, error) {
	if err := node.NewID(&opts.ID, "fork "+runID); err != nil {
		return StartResult{}, err
	}
	return rt.n.Fork(ctx, runID, at, node.Fork{ForkOptions: opts})
}
