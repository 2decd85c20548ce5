package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/hitch-dev/hitch/store"
)

// The keeper renews the leases of every run an engine drives, a bounded
// batch of runs per store call rather than one call per run, and asks the
// store for the cancel requests made by other processes for this node's
// runs: a node with thousands of runs waiting on their models costs its
// store a few statements a period, and
// a run in flight holds no goroutine of its own beyond its runner's. The
// keeper runs while the engine drives at least one run (Engine.spawn
// starts it, the last runner to return stops it), so an idle engine holds
// no goroutine.
//
// A lease is renewed every RenewEvery from its claim's period on: also
// while the runner reads and folds the journal and opens the workspace,
// which can outlast the lease. A renewal the store refuses (another node
// holds the lease, or the run ended) stops that runner at once; a renewal
// that fails for another reason is retried at the next period until the
// lease would have lapsed, and then the runner stops. A runner cancelled
// longer than ForceSettleGrace ago and still not settled is no longer
// renewed, so its lease expires and another node finalizes the run.

// startKeeper starts the keeper; e.mu must be held.
func (e *Engine) startKeeper() {
	ctx, stop := context.WithCancel(context.Background())
	e.keeperStop = stop
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.keep(ctx)
	}()
}

// stopKeeper stops the keeper when no runner is left; e.mu must be held.
func (e *Engine) stopKeeper() {
	if len(e.active) == 0 && e.keeperStop != nil {
		e.keeperStop()
		e.keeperStop = nil
	}
}

func (e *Engine) keep(ctx context.Context) {
	renew := time.NewTicker(e.cfg.RenewEvery)
	poll := time.NewTicker(e.cfg.CancelPoll)
	defer renew.Stop()
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-renew.C:
			e.renewAll(ctx)
		case <-poll.C:
			e.pollCancels(ctx)
		}
	}
}

// held lists the runners whose leases the keeper renews, in batches of at
// most store.MaxListLimit.
func (e *Engine) held() [][]*runner {
	e.mu.Lock()
	defer e.mu.Unlock()
	var all [][]*runner
	var batch []*runner
	for _, r := range e.active {
		if r.lost() {
			continue
		}
		if at := r.cancelAt.Load(); at != 0 && time.Since(time.Unix(0, at)) > e.cfg.ForceSettleGrace {
			continue // cancelled long ago and still not settled: let the lease lapse
		}
		if len(batch) == store.MaxListLimit {
			all, batch = append(all, batch), nil
		}
		batch = append(batch, r)
	}
	if len(batch) > 0 {
		all = append(all, batch)
	}
	return all
}

// renewAll renews the lease of every runner, a batch at a time.
func (e *Engine) renewAll(ctx context.Context) {
	for _, batch := range e.held() {
		p := store.LeaseRenewManyParams{Owner: e.cfg.Owner, TTL: e.cfg.LeaseTTL, Leases: make([]store.LeaseHeld, len(batch))}
		for i, r := range batch {
			p.Leases[i] = store.LeaseHeld{RunID: r.runID, Token: r.token}
		}
		sent := time.Now()
		// A slow store (a busy writer, a loaded machine) may answer late:
		// a late renewal still extends the lease, so wait for it as long
		// as the lease lasts rather than giving up at the next period.
		cctx, cancel := context.WithTimeout(ctx, e.cfg.LeaseTTL)
		got, err := e.cfg.Store.LeaseRenewMany(cctx, p)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			// Transient errors are retried until a lease would have
			// lapsed; past that another node may hold the run.
			for _, r := range batch {
				if time.Since(time.Unix(0, r.renewed.Load())) >= e.cfg.LeaseTTL {
					r.end(fmt.Errorf("%w: not renewed for %s: %w", errFenced, e.cfg.LeaseTTL, err))
				}
			}
			continue
		}
		for i, r := range batch {
			switch {
			case !got[i].Renewed:
				r.fenced("renew", fmt.Errorf("%w: the store no longer holds lease %d of %s for this node", store.ErrFenced, r.token, r.runID))
			default:
				r.renewed.Store(sent.UnixNano())
				if got[i].CancelRequested {
					r.requestCancel()
				}
			}
		}
	}
}

// pollCancels asks the store which runs leased to this node have a cancel
// requested by another process, a page at a time, and tells their runners.
// The store answers from its runs with a cancel pending, so a poll costs
// the same however many runs are in flight.
func (e *Engine) pollCancels(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, e.cfg.CancelPoll)
	defer cancel()
	p := store.RunCancelRequestedParams{Owner: e.cfg.Owner}
	for {
		ids, err := e.cfg.Store.RunCancelRequested(cctx, p)
		if err != nil {
			return // the next poll asks again
		}
		var asked []*runner
		e.mu.Lock()
		for _, id := range ids {
			if r := e.active[id]; r != nil && !r.lost() && !r.cancelled.Load() {
				asked = append(asked, r)
			}
		}
		e.mu.Unlock()
		for _, r := range asked {
			r.requestCancel()
		}
		if len(ids) < store.MaxListLimit {
			return
		}
		p.After = ids[len(ids)-1]
	}
}
