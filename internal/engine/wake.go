package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/tool"
)

// Errors of wakes and pending calls.
var (
	ErrNoWake        = errors.New("no wake is armed for the event")
	ErrWakeDelivered = errors.New("the event was already delivered")
	ErrWakeExpired   = errors.New("the wake's deadline has passed")
	ErrNotPending    = errors.New("the call does not wait for a result from outside")
	ErrCallCompleted = errors.New("the call already has a result")
	ErrCallTimedOut  = errors.New("the pending call timed out")
	ErrNotHeld       = errors.New("the call is not held by a hook")
)

// The states of an armed wake and of an external call.
const (
	wakeArmed        = "armed"
	wakeDelivered    = "delivered"
	wakeExpired      = "expired"
	outsidePending   = "pending"
	outsideCompleted = "completed"
	outsideTimedOut  = "timed_out"
)

// applyWait folds the entries of wakes and pending calls.
func (s *state) applyWait(e store.Entry, decode func(any) error) error {
	var key string
	var apply func(c *callState)
	switch e.Kind {
	case KindWakeArmed:
		var w WakeArmed
		if err := decode(&w); err != nil {
			return err
		}
		key = w.Call
		apply = func(c *callState) { c.wake, c.event, c.deadline = wakeArmed, w.Event, &w.Deadline }
	case KindWakeDelivered:
		var w WakeDelivered
		if err := decode(&w); err != nil {
			return err
		}
		key = w.Call
		apply = func(c *callState) {
			c.wake, c.done, c.isError = wakeDelivered, true, false
			c.result = fmt.Sprintf("the event %q arrived", w.Event)
			if len(w.Data) > 0 {
				c.result += " with data: " + string(w.Data)
			}
		}
	case KindWakeExpired:
		var w WakeExpired
		if err := decode(&w); err != nil {
			return err
		}
		key = w.Call
		apply = func(c *callState) {
			c.wake, c.done, c.isError = wakeExpired, true, false
			c.result = fmt.Sprintf("the event %q did not arrive by the deadline, %s", w.Event, w.Deadline.UTC().Format(time.RFC3339))
		}
	case KindCallPending:
		var p CallPending
		if err := decode(&p); err != nil {
			return err
		}
		key = p.Call
		apply = func(c *callState) { c.started, c.outside, c.deadline = 1, outsidePending, &p.Deadline }
	case KindCallCompleted:
		var p CallCompleted
		if err := decode(&p); err != nil {
			return err
		}
		key = p.Call
		apply = func(c *callState) {
			c.outside, c.done, c.uncertain = outsideCompleted, true, false
			c.result, c.isError = p.Output, false
			if p.Error != "" {
				c.result, c.isError = p.Error, true
			}
		}
	case KindCallTimedOut:
		var p CallTimedOut
		if err := decode(&p); err != nil {
			return err
		}
		key = p.Call
		apply = func(c *callState) {
			c.outside, c.done, c.isError = outsideTimedOut, true, true
			c.result = fmt.Sprintf("no result came from outside by the call's deadline, %s; treat it as not done", p.Deadline.UTC().Format(time.RFC3339))
		}
	}
	c := s.findCall(key)
	if c == nil {
		return fmt.Errorf("journal entry %d (%s): unknown call %q", e.Pos, e.Kind, key)
	}
	apply(c)
	return nil
}

// waiting reports a call that waits on the outside world: an armed wake
// or a pending external call, with no result yet.
func (c *callState) waiting() bool {
	return !c.done && (c.wake == wakeArmed || c.outside == outsidePending)
}

// waitDeadlines is the earliest deadline of the run's waits (armed wakes,
// pending calls, approval requests), or zero when none has one.
func (s *state) waitDeadline() time.Time {
	var at time.Time
	earlier := func(t *time.Time) {
		if t != nil && (at.IsZero() || t.Before(at)) {
			at = *t
		}
	}
	for _, t := range s.turns {
		for _, c := range t.calls {
			switch {
			case c.waiting():
				earlier(c.deadline)
			case c.approval == approvalPending && !c.done:
				earlier(c.expires)
			}
		}
	}
	return at
}

// arm stages the wake an await_event call asks for, or a failure the
// model sees when its arguments do not make one.
func (r *runner) arm(c *callState, aw tool.Awaiter) error {
	fail := func(why string) {
		r.stage(entry(KindCallFailed, CallFailed{Call: c.key, Error: why}))
	}
	a, err := aw.Await(json.RawMessage(c.args()))
	if err != nil {
		fail(err.Error())
		return nil
	}
	if len(a.Event) > hitchtype.MaxEventNameBytes {
		fail(fmt.Sprintf("invalid arguments for %s: name is %d bytes long, at most %d", c.call.Name, len(a.Event), hitchtype.MaxEventNameBytes))
		return nil
	}
	now, err := r.e.cfg.Store.Now(r.ctx)
	if err != nil {
		return fmt.Errorf("read store clock: %w", err)
	}
	maxWait := r.agent.Limits.MaxWait
	deadline := now.Add(maxWait)
	switch {
	case !a.Until.IsZero():
		deadline = a.Until
	case a.Timeout > 0:
		deadline = now.Add(a.Timeout)
	}
	switch {
	case !deadline.After(now):
		fail(fmt.Sprintf("invalid arguments for %s: until %s is not in the future (it is now %s)", c.call.Name, deadline.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339)))
		return nil
	case deadline.After(now.Add(maxWait)):
		fail(fmt.Sprintf("invalid arguments for %s: the deadline %s is further than the longest wait allowed, %s from now", c.call.Name, deadline.UTC().Format(time.RFC3339), maxWait))
		return nil
	}
	r.stage(entry(KindWakeArmed, WakeArmed{Call: c.key, Event: a.Event, Deadline: deadline.UTC()}))
	return nil
}

// startPending journals the start of an external call, with its charge,
// and the deadline of its wait for a result.
func (r *runner) startPending(c *callState, info tool.Info) (ended bool, err error) {
	if ended, err := r.checkWall(); ended || err != nil {
		return ended, err
	}
	now, err := r.e.cfg.Store.Now(r.ctx)
	if err != nil {
		return false, fmt.Errorf("read store clock: %w", err)
	}
	lim := r.agent.Limits
	timeout := info.Timeout
	switch {
	case timeout == 0:
		timeout = lim.PendingCallTimeout
	case timeout < 0 || timeout > lim.MaxWait: // Infinite, or past the bound
		timeout = lim.MaxWait
	}
	return r.reserve(r.toolCharge(), entry(KindCallPending, CallPending{Call: c.key, Deadline: now.Add(timeout).UTC()}), durableNow)
}

// expireWaits settles, by the store's clock, armed wakes and pending
// calls past their deadlines: the model is told.
func (r *runner) expireWaits() error {
	var now time.Time
	for _, t := range r.st.turns {
		for _, c := range t.calls {
			if !c.waiting() || c.deadline == nil {
				continue
			}
			if now.IsZero() {
				var err error
				if now, err = r.e.cfg.Store.Now(r.ctx); err != nil {
					return fmt.Errorf("read store clock: %w", err)
				}
			}
			if now.Before(*c.deadline) {
				continue
			}
			if c.wake == wakeArmed {
				r.stage(entry(KindWakeExpired, WakeExpired{Call: c.key, Event: c.event, Deadline: *c.deadline}))
			} else {
				r.stage(entry(KindCallTimedOut, CallTimedOut{Call: c.key, Deadline: *c.deadline}))
			}
		}
	}
	return nil
}

// findWake finds the wake armed for event: the first armed and not yet
// delivered, in call order. expired reports one past its deadline at now.
func findWake(st *state, event string, now time.Time) (c *callState, expired bool, err error) {
	var delivered, lapsed *callState
	for _, t := range st.turns {
		for _, k := range t.calls {
			if k.event != event {
				continue
			}
			switch k.wake {
			case wakeArmed:
				if st.ended != nil {
					return nil, false, fmt.Errorf("%w: the run has ended", store.ErrEnded)
				}
				return k, !now.Before(*k.deadline), nil
			case wakeDelivered:
				delivered = k
			case wakeExpired:
				lapsed = k
			}
		}
	}
	switch {
	case delivered != nil && (lapsed == nil || callAfter(delivered.key, lapsed.key)):
		return nil, false, fmt.Errorf("%w: %q (call %s)", ErrWakeDelivered, event, delivered.key)
	case lapsed != nil:
		return nil, false, fmt.Errorf("%w: %q (call %s, deadline %s)", ErrWakeExpired, event, lapsed.key, lapsed.deadline.UTC().Format(time.RFC3339))
	case st.ended != nil:
		return nil, false, fmt.Errorf("%w: the run has ended", store.ErrEnded)
	}
	return nil, false, fmt.Errorf("%w: %q", ErrNoWake, event)
}

// WakeParams deliver an event to a run.
type WakeParams struct {
	Event string
	// Data, when set, is JSON the model is shown with the event.
	Data json.RawMessage
	By   string
}

// CheckWake checks a delivery's fields, naming the bad one.
func CheckWake(p WakeParams) error {
	switch {
	case p.Event == "":
		return errors.New("event: is required")
	case len(p.Event) > hitchtype.MaxEventNameBytes:
		return fmt.Errorf("event: %d bytes long, at most %d", len(p.Event), hitchtype.MaxEventNameBytes)
	case len(p.Data) > hitchtype.MaxWakeDataBytes:
		return fmt.Errorf("data: %d bytes long, at most %d", len(p.Data), hitchtype.MaxWakeDataBytes)
	case len(p.Data) > 0 && !json.Valid(p.Data):
		return errors.New("data: is not valid JSON")
	}
	return nil
}

// Wake delivers an event to the wake a run armed for it and drives the
// run on in the background. A wake past its deadline by the store's clock
// is settled as expired (the model is told) and the delivery refused with
// ErrWakeExpired; a second delivery of the same wake gives
// ErrWakeDelivered; no armed wake of that name gives ErrNoWake. A refused
// delivery changes nothing but that lapse.
func (e *Engine) Wake(ctx context.Context, runID string, p WakeParams, wait time.Duration) error {
	if err := CheckWake(p); err != nil {
		return err
	}
	check := func(st *state, now time.Time) (*callState, bool, error) { return findWake(st, p.Event, now) }
	return e.answerCall(ctx, runID, wait, check, nil, func(r *runner, c *callState, expired bool) (reply, err error) {
		if expired {
			return fmt.Errorf("%w: %q (call %s, deadline %s)", ErrWakeExpired, p.Event, c.key, c.deadline.UTC().Format(time.RFC3339)), r.lapse(r.expireWaits)
		}
		var data json.RawMessage
		if len(p.Data) > 0 {
			data = p.Data
		}
		err = r.commit(entry(KindWakeDelivered, WakeDelivered{Call: c.key, Event: p.Event, Data: data, By: p.By}))
		return err, err
	})
}

// checkCompletion finds the call a completion is for. expired reports a
// pending call, or a held call's request, past its deadline at now.
func checkCompletion(st *state, p Completion, now time.Time) (c *callState, expired bool, err error) {
	c = st.findCall(p.Call)
	switch {
	case c == nil:
		return nil, false, fmt.Errorf("%w: %s", ErrUnknownCall, p.Call)
	case c.outside == outsideCompleted:
		return nil, false, fmt.Errorf("%w: %s", ErrCallCompleted, p.Call)
	case c.outside == outsideTimedOut:
		return nil, false, fmt.Errorf("%w: %s (deadline %s)", ErrCallTimedOut, p.Call, c.deadline.UTC().Format(time.RFC3339))
	case c.outside == outsidePending && !c.done:
		if p.Execute {
			return nil, false, fmt.Errorf("%w: %s is an external call waiting for its result; give --output or --error", ErrNotHeld, p.Call)
		}
	case c.held && c.approval == approvalExpired:
		return nil, false, fmt.Errorf("%w: %s (deadline %s)", ErrApprovalExpired, p.Call, c.expires.UTC().Format(time.RFC3339))
	case c.held && (c.approval != approvalPending || c.done):
		return nil, false, fmt.Errorf("%w: %s (%s)", ErrAnswered, p.Call, c.approval)
	case c.held:
		if st.ended != nil {
			return nil, false, fmt.Errorf("%w: the run has ended", store.ErrEnded)
		}
		return c, c.overdue(now), nil
	case p.Execute:
		return nil, false, fmt.Errorf("%w: %s", ErrNotHeld, p.Call)
	default:
		return nil, false, fmt.Errorf("%w: %s", ErrNotPending, p.Call)
	}
	if st.ended != nil {
		return nil, false, fmt.Errorf("%w: the run has ended", store.ErrEnded)
	}
	return c, !now.Before(*c.deadline), nil
}

// CompleteCall gives a pending external call its result from outside, or
// releases or answers a call held by a pre-tool hook, and drives the run
// on in the background. A second completion of the same call is refused
// with ErrCallCompleted and changes nothing. A pending call past its
// deadline by the store's clock is settled as timed out (the model is
// told) and the completion refused with ErrCallTimedOut; a held call past
// its request's deadline gives ErrApprovalExpired the same way.
func (e *Engine) CompleteCall(ctx context.Context, runID string, p Completion, wait time.Duration) error {
	if p.Execute && (p.Output != "" || p.Error != "") {
		return errors.New("execute: give it alone, without output or error")
	}
	if p.Output != "" && p.Error != "" {
		return errors.New("output, error: give one, not both")
	}
	check := func(st *state, now time.Time) (*callState, bool, error) { return checkCompletion(st, p, now) }
	return e.answerCall(ctx, runID, wait, check, nil, func(r *runner, c *callState, expired bool) (reply, err error) {
		switch {
		case expired && c.held:
			return fmt.Errorf("%w: %s (deadline %s)", ErrApprovalExpired, p.Call, c.expires.UTC().Format(time.RFC3339)), r.lapse(r.expireApprovals)
		case expired:
			return fmt.Errorf("%w: %s (deadline %s)", ErrCallTimedOut, p.Call, c.deadline.UTC().Format(time.RFC3339)), r.lapse(r.expireWaits)
		}
		if n := max(len(p.Output), len(p.Error)); n > r.agent.Limits.MaxToolResult {
			return fmt.Errorf("output: %d bytes, over the largest kept tool result (%d bytes)", n, r.agent.Limits.MaxToolResult), nil
		}
		if p.Execute {
			err = r.commit(entry(KindApprovalGrant, ApprovalAnswer{Call: c.key, By: p.By, Reason: "released to run"}))
			return err, err
		}
		err = r.commit(entry(KindCallCompleted, CallCompleted{Call: c.key, Output: p.Output, Error: p.Error, By: p.By}))
		return err, err
	})
}

// Waits lists what a run waits on: armed wakes, pending and held calls,
// approval requests, sub-agent runs and uncertain effects, in call order,
// each with its deadline by the store's clock, if any.
func (e *Engine) Waits(ctx context.Context, runID string) ([]Wait, error) {
	st, err := e.foldRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	var out []Wait
	if st.ended != nil {
		return out, nil
	}
	for _, t := range st.turns {
		for _, c := range t.calls {
			w := Wait{Call: c.key, Tool: c.call.Name}
			switch {
			case c.done:
				continue
			case c.wake == wakeArmed:
				w.Kind, w.Event, w.Until = hitchtype.WaitEvent, c.event, c.deadline
			case c.outside == outsidePending:
				w.Kind, w.Until = hitchtype.WaitExternal, c.deadline
			case c.uncertain:
				w.Kind = hitchtype.WaitUncertain
			case c.approval == approvalPending && c.held:
				w.Kind, w.Until = hitchtype.WaitHeld, c.expires
			case c.approval == approvalPending:
				w.Kind, w.Until = hitchtype.WaitApproval, c.expires
			case c.started > 0 && st.waiting != nil && st.waiting.Reason == "children" && slices.Contains(st.waiting.Calls, c.key):
				w.Kind = hitchtype.WaitChildren
			default:
				continue
			}
			out = append(out, w)
		}
	}
	return out, nil
}
