package hitch

import (
	"context"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/trigger"
	"github.com/hitch-dev/hitch/store"
)

// Trigger bindings: the types are hitchtype's.
type (
	// TriggerSpec defines a trigger binding: when it fires, what each
	// occurrence does, and when it ends (see hitchtype.TriggerSpec).
	TriggerSpec = hitchtype.TriggerSpec
	// Trigger is a binding as the store holds it.
	Trigger = hitchtype.Trigger
	// TriggerOptions adjust CreateTrigger.
	TriggerOptions = hitchtype.TriggerOptions
	// TriggerListOptions filter and page ListTriggers.
	TriggerListOptions = hitchtype.TriggerListOptions
)

// Missed-occurrence policies of a binding (TriggerSpec.Missed).
const (
	// MissedOnce fires once for all the missed occurrences, then goes on
	// with the schedule (the default).
	MissedOnce = hitchtype.MissedOnce
	// MissedSkip fires none of them and goes on with the schedule.
	MissedSkip = hitchtype.MissedSkip
)

// Bounds of a binding and of the schedule tools.
const (
	// MaxTriggerIDBytes bounds a binding's id, so the run ids derived
	// from it stay within MaxRunIDBytes.
	MaxTriggerIDBytes = hitchtype.MaxTriggerIDBytes
	// MaxTriggerTextBytes bounds a binding's input or text.
	MaxTriggerTextBytes = hitchtype.MaxTriggerTextBytes
	// MaxWakeAhead bounds how far ahead schedule_wake may set a wake.
	MaxWakeAhead = hitchtype.MaxWakeAhead
)

// Errors of trigger bindings.
var (
	// ErrTriggerNotFound: no binding has that id.
	ErrTriggerNotFound = store.ErrTriggerNotFound
	// ErrNoTriggers: the store does not implement store.TriggerStore.
	ErrNoTriggers = trigger.ErrNoTriggers
	// ErrNotInSession: a schedule tool ran in a run that is no session's
	// submission (nor below one), so there is no conversation to wake.
	ErrNotInSession = trigger.ErrNotInSession
)

// OccurrenceID is the id an occurrence's dispatch carries: the run id of
// a run target, the idempotency key of a session target. The same binding
// and occurrence always give the same id, so a dispatch repeated after a
// crash starts or sends nothing new.
func OccurrenceID(bindingID string, occurrence time.Time) string {
	return hitchtype.OccurrenceID(bindingID, occurrence)
}

// CreateTrigger stores a binding. Its first occurrence is the first at or
// after the store clock's now (a one-shot's At, however early: a time
// already past is missed, and fires at once by MissedOnce). It is
// idempotent by id: created is false when it existed.
func (rt *Runtime) CreateTrigger(ctx context.Context, spec TriggerSpec, o TriggerOptions) (t Trigger, created bool, err error) {
	return rt.n.Trig.Create(ctx, spec, o)
}

// GetTrigger returns one binding.
func (rt *Runtime) GetTrigger(ctx context.Context, id string) (Trigger, error) {
	return rt.n.Trig.Get(ctx, id)
}

// ListTriggers returns bindings in order of their ids.
func (rt *Runtime) ListTriggers(ctx context.Context, o TriggerListOptions) ([]Trigger, error) {
	return rt.n.Trig.List(ctx, o)
}

// PauseTrigger stops a binding from firing until ResumeTrigger; the
// occurrences that come meanwhile are judged by its missed policy on
// resume. Both are idempotent; a done binding stays done.
func (rt *Runtime) PauseTrigger(ctx context.Context, id string) (Trigger, error) {
	return rt.n.Trig.Pause(ctx, id)
}

// ResumeTrigger resumes a paused binding.
func (rt *Runtime) ResumeTrigger(ctx context.Context, id string) (Trigger, error) {
	return rt.n.Trig.Resume(ctx, id)
}

// RemoveTrigger deletes a binding; removed is false when there was none.
// An occurrence being dispatched as it is removed may still fire.
func (rt *Runtime) RemoveTrigger(ctx context.Context, id string) (removed bool, err error) {
	return rt.n.Trig.Remove(ctx, id)
}

// DispatchTriggers claims the occurrences that are due by the store clock,
// at most Config.Triggers.Batch of them, and dispatches each: claim,
// dispatch, retire. A run target's run is created queued (Detached) for a
// sweeper to drive; a session target's message is sent. Each dispatch
// carries OccurrenceID, so one repeated after a crash starts or sends
// nothing new. A dispatch that fails is given back and tried again later,
// doubling from Config.Triggers.Poll up to DefaultTriggerMaxRetry. It
// returns how many occurrences it claimed.
func (rt *Runtime) DispatchTriggers(ctx context.Context) (int, error) { return rt.n.Trig.Dispatch(ctx) }

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
func (rt *Runtime) RunTriggers(ctx context.Context) error { return rt.n.RunTriggers(ctx) }
