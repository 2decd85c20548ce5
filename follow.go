package hitch

import (
	"context"
	"fmt"
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
	return func(yield func(store.Entry, error) bool) {
		if after < 0 {
			yield(store.Entry{}, fmt.Errorf("follow %s: after %d: want 0 or more", runID, after))
			return
		}
		run, err := rt.cfg.Store.RunGet(ctx, runID)
		if err != nil {
			yield(store.Entry{}, fmt.Errorf("follow %s: %w", runID, err))
			return
		}
		rt.n.Follows(ctx, run.ID, run.Position, run.Status.Terminal(), after, yield, func(id string) string { return id })
	}
}

// Follow follows a run of the tenant as Runtime.Follow does.
func (s *Scope) Follow(ctx context.Context, runID string, after int64) iter.Seq2[store.Entry, error] {
	return func(yield func(store.Entry, error) bool) {
		if err := s.allow("Follow"); err != nil {
			yield(store.Entry{}, err)
			return
		}
		run, _, err := s.find(ctx, runID)
		if err != nil {
			yield(store.Entry{}, err)
			return
		}
		s.rt.n.Follows(ctx, run.ID, run.Position, run.Status.Terminal(), after, yield, s.local)
	}
}
