package hitch

import (
	"context"
	"iter"

	"github.com/hitch-dev/hitch/internal/node"
	"github.com/hitch-dev/hitch/store"
)

// ErrFollowerBehind ends a Follow whose caller left Config.FollowBuffer
// entries unread: the run's other followers do not wait for it. Following
// again after the last entry it took resumes without a gap.
var ErrFollowerBehind = node.ErrFollowerBehind

// Follow yields a run's journal entries after position after, in order and
// each once, as they are committed, until the run's terminal entry has
// been yielded. The followers of one run in this runtime share one reader:
// each commit is read from the store once, when this runtime commits it or
// at the latest Config.FollowPoll later (a commit of another node), and
// handed to every follower through a buffer of Config.FollowBuffer
// entries. A follower whose buffer fills is ended with ErrFollowerBehind.
// The sequence also ends with ErrNotFound for an unknown run, with ctx's
// error, or with the store's; it ends with an error when the runtime
// closes.
func (rt *Runtime) Follow(ctx context.Context, runID string, after int64) iter.Seq2[store.Entry, error] {
	return rt.n.FollowRun(ctx, runID, after)
}
