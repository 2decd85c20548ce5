package trigger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/hook"
	"github.com/hitch-dev/hitch/store"
)

// maxMissedCount bounds the occurrences counted one by one past a missed
// one; past it, the schedule resumes from now and the count is a floor.
const maxMissedCount = 100_000

// Dispatch claims the occurrences that are due by the store clock, at most
// Config.Triggers.Batch of them, and dispatches each: claim, dispatch,
// retire. Each dispatch carries hitchtype.OccurrenceID, so one repeated
// after a crash starts or sends nothing new. A dispatch that fails is
// given back and tried again later, doubling from Config.Triggers.Poll up
// to hitchtype.DefaultTriggerMaxRetry. It returns how many occurrences it
// claimed.
func (s *Service) Dispatch(ctx context.Context) (int, error) {
	ts, err := s.store("dispatch triggers")
	if err != nil {
		return 0, err
	}
	claimed, now, err := ts.TriggerClaim(ctx, store.TriggerClaimParams{Owner: s.cfg.Node, TTL: s.cfg.Triggers.ClaimTTL,
		Limit: s.cfg.Triggers.Batch})
	if err != nil {
		return 0, fmt.Errorf("dispatch triggers: %w", err)
	}
	var errs []error
	for _, t := range claimed {
		if err := s.fire(ctx, ts, t, now); err != nil {
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
func plan(spec hitchtype.TriggerSpec, t store.Trigger, now time.Time) (fire bool, missed int64, next time.Time, err error) {
	spec = spec.WithDefaults()
	sc, err := spec.Schedule()
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
		if spec.Missed == hitchtype.MissedSkip {
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
func (s *Service) fire(ctx context.Context, ts store.TriggerStore, t store.Trigger, now time.Time) error {
	release := func(cause error) error {
		retry := s.cfg.Triggers.Poll
		for i := 0; i < t.Failures && retry < hitchtype.DefaultTriggerMaxRetry; i++ {
			retry *= 2
		}
		_, err := ts.TriggerRelease(ctx, store.TriggerReleaseParams{ID: t.ID, Owner: t.ClaimOwner, Token: t.ClaimToken,
			Occurrence: t.NextFire, RetryAt: now.Add(min(retry, hitchtype.DefaultTriggerMaxRetry)), Error: cause.Error()})
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
	var skipped bool
	var why string
	if fire {
		if skipped, why, err = s.dispatch(ctx, tr.Spec, t.NextFire); err != nil {
			if ctx.Err() != nil {
				return ctx.Err() // the claim runs out and another node takes it
			}
			return release(err)
		}
		if skipped && s.cfg.Redact != nil {
			// A hook's reason comes from outside: it passes the one
			// redaction point before it is stored.
			why = string(s.cfg.Redact([]byte(why)))
		}
	}
	_, err = ts.TriggerRetire(ctx, store.TriggerRetireParams{ID: t.ID, Owner: t.ClaimOwner, Token: t.ClaimToken,
		Occurrence: t.NextFire, Fired: fire && !skipped, Missed: missed, Next: next, Skipped: skipped, SkipReason: why})
	if errors.Is(err, store.ErrTriggerFenced) || errors.Is(err, store.ErrTriggerNotFound) {
		// Another node took the occurrence over, or the binding was
		// removed or replaced: the dispatch was idempotent, nothing to do.
		return nil
	}
	return err
}

// dispatch starts the run or sends the message of one occurrence, between
// the target agent's pre_trigger and post_trigger hooks. skipped reports
// an occurrence a pre_trigger hook denied (or failed on: it fails closed),
// and why.
func (s *Service) dispatch(ctx context.Context, spec hitchtype.TriggerSpec, occ time.Time) (skipped bool, why string, err error) {
	id := hitchtype.OccurrenceID(spec.ID, occ)
	var h hook.TriggerHooks
	ev := hook.Trigger{ID: spec.ID, Occurrence: occ, Session: spec.Session, Input: spec.Input}
	if spec.Session != "" {
		ev.Input = spec.Text
	}
	var w Watch
	if s.cfg.Hooks != nil {
		if w, err = s.cfg.Hooks(ctx, spec); err != nil {
			return false, "", err
		}
		h, ev.Agent = w.Hooks, w.Agent
	}
	input := ev.Input
	if h != nil {
		v, err := callHook(ctx, w.Timeout, func(ctx context.Context) (hook.TriggerVerdict, error) { return h.PreTrigger(ctx, ev) })
		switch {
		case err != nil:
			return true, "the pre_trigger hook failed, so the occurrence was skipped: " + err.Error(), nil
		case v.Action == hook.Deny:
			return true, cmp.Or(v.Reason, "a pre_trigger hook denied it"), nil
		case v.Input != "":
			input = v.Input
		}
	}
	var d hook.Dispatched
	if spec.Session != "" {
		d.MessageID, err = s.cfg.Send(ctx, spec.Session, input, id)
	} else {
		spec.Input, d.RunID = input, id
		err = s.cfg.StartRun(ctx, spec, id)
	}
	if err != nil {
		return false, "", err
	}
	if h != nil {
		ev.Input = input
		// It only observes: its failure changes nothing.
		_, _ = callHook(ctx, w.Timeout, func(ctx context.Context) (struct{}, error) { return struct{}{}, h.PostTrigger(ctx, ev, d) })
	}
	return false, "", nil
}

// callHook calls a trigger hook bounded by timeout.
func callHook[T any](ctx context.Context, timeout time.Duration, f func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(timeout, hitchtype.DefaultHookTimeout))
	defer cancel()
	return f(ctx)
}

// Start starts the dispatcher; see hitch.Runtime.RunTriggers. Its first
// pass is at once. A store that keeps no bindings is ErrNoTriggers.
func (s *Service) Start(ctx context.Context) error {
	if _, err := s.store("run triggers"); err != nil {
		return err
	}
	return s.Base.Start(ctx, s.loop)
}

func (s *Service) loop(ctx context.Context) {
	failures := 0
	for {
		n, err := s.Dispatch(ctx)
		if ctx.Err() != nil {
			return
		}
		s.TestSignals.Passed.Signal(Pass{N: n, Err: err})
		wait := s.cfg.Triggers.Poll
		switch {
		case err != nil:
			failures++
			for i := 0; i < failures && wait < s.cfg.MaxBackoff; i++ {
				wait *= 2
			}
			wait = min(wait, s.cfg.MaxBackoff)
			if s.cfg.OnError != nil {
				s.cfg.OnError(err)
			}
		case n >= s.cfg.Triggers.Batch:
			failures = 0
			continue // more may be due
		default:
			failures = 0
			if at, ok, err := s.cfg.Store.TriggerNextDue(ctx); err == nil && ok {
				if now, err := s.cfg.Store.Now(ctx); err == nil {
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
			return
		case <-t.C:
		case <-s.wake:
			t.Stop()
		}
	}
}
