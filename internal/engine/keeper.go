package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/hitch-dev/hitch/store"
)

// The keeper renews the leases of every run an engine drives, and looks
// for cancel requests made by other processes, a bounded batch of runs per
// store call rather than one call per run: a node with thousands of runs
// waiting on their models costs its store a few statements a period, and
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

// held lists the runners whose leases the keeper looks after, in batches
// of at most store.MaxListLimit.
func (e *Engine) held(renewing bool) [][]*runner {
	e.mu.Lock()
	defer e.mu.Unlock()
	var all [][]*runner
	var batch []*runner
	for _, r := range e.active {
		if r.lost() {
			continue
		}
		if at := r.cancelAt.Load(); renewing && at != 0 && time.Since(time.Unix(0, at)) > e.cfg.ForceSettleGrace {
			continue // cancelled long ago and still not settled: let the lease lapse
		}
		if !renewing && r.cancelled.Load() {
			continue
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
	for _, batch := range e.held(true) {
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

// pollCancels asks the store which runs have a cancel requested by
// another process, a batch at a time, and tells their runners.
func (e *Engine) pollCancels(ctx context.Context) {
	for _, batch := range e.held(false) {
		ids := make([]string, len(batch))
		byID := make(map[string]*runner, len(batch))
		for i, r := range batch {
			ids[i], byID[r.runID] = r.runID, r
		}
		cctx, cancel := context.WithTimeout(ctx, e.cfg.CancelPoll)
		got, err := e.cfg.Store.RunCancelRequested(cctx, ids)
		cancel()
		if err != nil {
			continue // the next poll asks again
		}
		for _, id := range got {
			byID[id].requestCancel()
		}
	}
}
