package hitch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hitch-dev/hitch/store"
)

// triggers is the runtime's trigger machinery.
type triggers struct {
	cfg  TriggerConfig
	wake chan struct{} // capacity 1: a binding changed here
	// onPass, set by tests, sees every pass of RunTriggers.
	onPass func(n int, err error)
}

// poke wakes this node's dispatcher without ever blocking.
func (t *triggers) poke() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// maxMissedCount bounds the occurrences counted one by one past a missed
// one; past it, the schedule resumes from now and the count is a floor.
const maxMissedCount = 100_000

// DispatchTriggers claims the occurrences that are due by the store clock,
// at most Config.Triggers.Batch of them, and dispatches each: claim,
// dispatch, retire. A run target's run is created queued (Detached) for a
// sweeper to drive; a session target's message is sent. Each dispatch
// carries OccurrenceID, so one repeated after a crash starts or sends
// nothing new. A dispatch that fails is given back and tried again later,
// doubling from Config.Triggers.Poll up to DefaultTriggerMaxRetry. It
// returns how many occurrences it claimed.
func (rt *Runtime) DispatchTriggers(ctx context.Context) (int, error) {
	ts, err := rt.triggerStore("dispatch triggers")
	if err != nil {
		return 0, err
	}
	claimed, now, err := ts.TriggerClaim(ctx, store.TriggerClaimParams{Owner: rt.cfg.Node, TTL: rt.trig.cfg.ClaimTTL,
		Limit: rt.trig.cfg.Batch})
	if err != nil {
		return 0, fmt.Errorf("dispatch triggers: %w", err)
	}
	var errs []error
	for _, t := range claimed {
		if err := rt.fire(ctx, ts, t, now); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return len(claimed), fmt.Errorf("dispatch triggers: %w", err)
	}
	return len(claimed), nil
}

// plan decides what a claimed occurrence does: whether it fires, how many
// occurrences it counts as missed, and the next occurrence (zero: the
// binding is done).
func plan(spec TriggerSpec, t store.Trigger, now time.Time) (fire bool, missed int64, next time.Time, err error) {
	spec = spec.withDefaults()
	sc, err := spec.schedule()
	if err != nil {
		return false, 0, time.Time{}, err
	}
	occ := t.NextFire
	fire = true
	switch {
	case !spec.ExpiresAt.IsZero() && occ.After(spec.ExpiresAt):
		return false, 0, time.Time{}, nil // expired before it came
	case now.Sub(occ) > spec.Grace: // missed
		if sc != nil {
			next = sc.Next(occ)
			for i := 0; !next.IsZero() && !next.After(now); i++ {
				if i == maxMissedCount {
					next = sc.Next(now)
					break
				}
				missed++
				next = sc.Next(next)
			}
		}
		if spec.Missed == MissedSkip {
			fire, missed = false, missed+1
		}
	case sc != nil:
		next = sc.Next(occ)
	}
	fires := t.FireCount
	if fire {
		fires++
	}
	if sc == nil || (spec.MaxFires > 0 && fires >= spec.MaxFires) ||
		(!spec.ExpiresAt.IsZero() && next.After(spec.ExpiresAt)) {
		next = time.Time{}
	}
	return fire, missed, next, nil
}

// fire handles one claimed occurrence. Only a store error is returned: a
// failed dispatch is recorded with the binding and retried.
func (rt *Runtime) fire(ctx context.Context, ts store.TriggerStore, t store.Trigger, now time.Time) error {
	release := func(cause error) error {
		retry := rt.trig.cfg.Poll
		for i := 0; i < t.Failures && retry < DefaultTriggerMaxRetry; i++ {
			retry *= 2
		}
		_, err := ts.TriggerRelease(ctx, store.TriggerReleaseParams{ID: t.ID, Owner: t.ClaimOwner, Token: t.ClaimToken,
			Occurrence: t.NextFire, RetryAt: now.Add(min(retry, DefaultTriggerMaxRetry)), Error: cause.Error()})
		if err != nil && !errors.Is(err, store.ErrTriggerFenced) && !errors.Is(err, store.ErrTriggerNotFound) {
			return err
		}
		return nil
	}
	tr, err := triggerOf(t)
	if err != nil {
		return release(err)
	}
	fire, missed, next, err := plan(tr.Spec, t, now)
	if err != nil {
		return release(err)
	}
	if fire {
		if err := rt.dispatch(ctx, tr.Spec, t.NextFire); err != nil {
			if ctx.Err() != nil {
				return ctx.Err() // the claim runs out and another node takes it
			}
			return release(err)
		}
	}
	_, err = ts.TriggerRetire(ctx, store.TriggerRetireParams{ID: t.ID, Owner: t.ClaimOwner, Token: t.ClaimToken,
		Occurrence: t.NextFire, Fired: fire, Missed: missed, Next: next})
	if errors.Is(err, store.ErrTriggerFenced) || errors.Is(err, store.ErrTriggerNotFound) {
		// Another node took the occurrence over, or the binding was
		// removed or replaced: the dispatch was idempotent, nothing to do.
		return nil
	}
	return err
}

// dispatch starts the run or sends the message of one occurrence.
func (rt *Runtime) dispatch(ctx context.Context, spec TriggerSpec, occ time.Time) error {
	id := OccurrenceID(spec.ID, occ)
	if spec.Session != "" {
		_, err := rt.Send(ctx, spec.Session, spec.Text, SendOptions{IdempotencyKey: id})
		return err
	}
	a, err := rt.agentNamed(spec.Agent, spec.Version)
	if err != nil {
		return err
	}
	_, err = rt.Start(ctx, a, spec.Input, WithID(id), Detached())
	return err
}

// RunTriggers runs the node's trigger dispatcher, a background service,
// until ctx ends or the runtime closes. Every node may run it: a claim is
// fenced, so each occurrence is dispatched by one node, and a node that
// dies mid-dispatch leaves its claim to run out (Config.Triggers.ClaimTTL)
// for another to dispatch again, idempotently. It passes at once, again
// at once while a pass fills its batch, when this runtime creates,
// pauses or resumes a binding, when the next occurrence is due by the
// store clock, and at least every Config.Triggers.Poll. A store error
// does not end it: it waits, doubling from the poll interval up to
// DefaultSweepMaxBackoff, and reports the error to Config.OnEvent. It
// returns nil when stopped.
func (rt *Runtime) RunTriggers(ctx context.Context) error {
	if _, err := rt.triggerStore("run triggers"); err != nil {
		return err
	}
	ts := rt.cfg.Store.(store.TriggerStore)
	failures := 0
	for {
		n, err := rt.DispatchTriggers(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-rt.eng.Closing():
			return nil
		default:
		}
		if rt.trig.onPass != nil {
			rt.trig.onPass(n, err)
		}
		wait := rt.trig.cfg.Poll
		switch {
		case err != nil:
			failures++
			for i := 0; i < failures && wait < DefaultSweepMaxBackoff; i++ {
				wait *= 2
			}
			wait = min(wait, DefaultSweepMaxBackoff)
			if f := rt.cfg.OnEvent; f != nil {
				f(Event{Err: fmt.Errorf("triggers: %w", err)})
			}
		case n >= rt.trig.cfg.Batch:
			failures = 0
			continue // more may be due
		default:
			failures = 0
			if at, ok, err := ts.TriggerNextDue(ctx); err == nil && ok {
				if now, err := rt.cfg.Store.Now(ctx); err == nil {
					// A floor, so that a binding due but not yet claimable
					// (a clock read between two nodes' claims) is no spin.
					wait = min(wait, max(at.Sub(now), time.Millisecond))
				}
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-rt.eng.Closing():
			t.Stop()
			return nil
		case <-t.C:
		case <-rt.trig.wake:
			t.Stop()
		}
	}
}
