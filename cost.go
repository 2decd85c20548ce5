package hitch

import (
	"context"
	"fmt"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// ContextRequests returns a run's model requests, oldest first: the
// context account of each (where its tokens sat, the window, the
// estimator), what the provider reported and what it cost. The journal is
// read in bounded pages.
func (rt *Runtime) ContextRequests(ctx context.Context, runID string) ([]hitchtype.ContextRequest, error) {
	var f hitchtype.ContextFold
	for after := int64(0); ; {
		es, err := rt.cfg.Store.JournalRead(ctx, store.JournalReadParams{RunID: runID, After: after, Limit: store.DefaultReadLimit})
		if err != nil {
			return nil, fmt.Errorf("context requests of %s: %w", runID, err)
		}
		for _, e := range es {
			if err := f.Add(e.Kind, e.Data); err != nil {
				return nil, fmt.Errorf("context requests of %s: entry %d: %w", runID, e.Pos, err)
			}
		}
		if len(es) < store.DefaultReadLimit {
			return f.Requests(), nil
		}
		after = es[len(es)-1].Pos
	}
}

// LatestContextRequests returns up to n of a run's latest model
// requests, oldest first, as ContextRequests does; more reports that
// earlier ones exist. It reads the journal backwards from its end a page
// at a time and stops once it holds n+1 requests, so a long journal costs
// what its last turns hold.
func (rt *Runtime) LatestContextRequests(ctx context.Context, runID string, n int) (reqs []hitchtype.ContextRequest, more bool, err error) {
	if n < 1 {
		return nil, false, fmt.Errorf("latest context requests of %s: n %d: want at least 1", runID, n)
	}
	run, err := rt.cfg.Store.RunGet(ctx, runID)
	if err != nil {
		return nil, false, fmt.Errorf("latest context requests of %s: %w", runID, err)
	}
	var pages [][]store.Entry
	seen := 0
	for from := run.Position; from > 0 && seen <= n; {
		after := max(0, from-int64(store.DefaultReadLimit))
		es, err := rt.cfg.Store.JournalRead(ctx, store.JournalReadParams{RunID: runID, After: after, Limit: int(from - after)})
		if err != nil {
			return nil, false, fmt.Errorf("latest context requests of %s: %w", runID, err)
		}
		for _, e := range es {
			if e.Kind == hitchtype.KindModelAttempt {
				seen++
			}
		}
		pages = append(pages, es)
		from = after
	}
	var f hitchtype.ContextFold
	for i := len(pages) - 1; i >= 0; i-- {
		for _, e := range pages[i] {
			if err := f.Add(e.Kind, e.Data); err != nil {
				return nil, false, fmt.Errorf("latest context requests of %s: entry %d: %w", runID, e.Pos, err)
			}
		}
	}
	reqs = f.Requests()
	if len(reqs) > n {
		return reqs[len(reqs)-n:], true, nil
	}
	return reqs, false, nil
}

// RunningCost is what a family of runs, or a session, has cost so far.
type RunningCost struct {
	// USD sums every model reply so far, at the model's price when it
	// came; nil when any is not priced (a model without a price, a reply
	// without usage, a failed or cut-off call, or a reply journaled before
	// replies were priced). A call still in flight is not counted yet.
	USD *float64
	// Runs is how many runs were counted, and Live how many of them have
	// not ended: their cost still grows.
	Runs, Live int
}

func (c *RunningCost) add(o RunningCost) {
	if c.Runs == 0 {
		c.USD = o.USD
	} else if c.USD != nil && o.USD != nil {
		v := *c.USD + *o.USD
		c.USD = &v
	} else {
		c.USD = nil
	}
	c.Runs += o.Runs
	c.Live += o.Live
}

// FamilyCost sums what a family (a root run and every run below it) has
// cost so far: an ended run's outcome, a live run's replies as its
// journal holds them.
func (rt *Runtime) FamilyCost(ctx context.Context, rootID string) (RunningCost, error) {
	rs, err := rt.eng.Family(ctx, rootID)
	if err != nil {
		return RunningCost{}, fmt.Errorf("family cost of %s: %w", rootID, err)
	}
	var total RunningCost
	for _, r := range rs {
		one := RunningCost{Runs: 1}
		run, err := RunOf(r)
		if err != nil {
			return RunningCost{}, err
		}
		if run.Outcome != nil {
			one.USD = run.Outcome.CostUSD
		} else {
			one.Live = 1
			reqs, err := rt.ContextRequests(ctx, r.ID)
			if err != nil {
				return RunningCost{}, fmt.Errorf("family cost of %s: %w", rootID, err)
			}
			one.USD = hitchtype.CostSoFar(reqs)
		}
		total.add(one)
	}
	return total, nil
}

// SessionCost sums what a session has cost so far: the family of every
// submission's run, the one at work included.
func (rt *Runtime) SessionCost(ctx context.Context, sessionID string) (RunningCost, error) {
	st, err := rt.SessionStatus(ctx, sessionID)
	if err != nil {
		return RunningCost{}, err
	}
	zero := 0.0
	total := RunningCost{USD: &zero}
	for _, sub := range st.Submissions {
		if sub.RunID == "" {
			continue
		}
		c, err := rt.FamilyCost(ctx, sub.RunID)
		if err != nil {
			return RunningCost{}, fmt.Errorf("session cost of %s: %w", sessionID, err)
		}
		total.add(c)
	}
	return total, nil
}
