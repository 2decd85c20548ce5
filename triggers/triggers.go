// Package triggers is the client of a runtime's trigger bindings: a
// schedule (cron, an interval, one time) bound to what each occurrence
// does — start a run, or send a message to a session. hitch.Runtime.Triggers
// hands out a Client; the runtime's dispatcher (hitch.Runtime.RunTriggers)
// fires the bindings. The types are hitchtype's.
package triggers

import (
	"context"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/trigger"
	"github.com/hitch-dev/hitch/store"
)

// Client creates, reads, pauses and removes bindings.
type Client interface {
	// Create stores a binding. Its first occurrence is the first at or
	// after the store clock's now (a one-shot's At, however early: a time
	// already past is missed, and fires at once by MissedOnce). It is
	// idempotent by id: created is false when it existed.
	Create(ctx context.Context, spec Spec, o Options) (t Trigger, created bool, err error)
	// Get returns one binding.
	Get(ctx context.Context, id string) (Trigger, error)
	// List returns bindings in order of their ids.
	List(ctx context.Context, o ListOptions) ([]Trigger, error)
	// Pause stops a binding from firing until Resume; the occurrences
	// that come meanwhile are judged by its missed policy on resume. Both
	// are idempotent; a done binding stays done.
	Pause(ctx context.Context, id string) (Trigger, error)
	// Resume resumes a paused binding.
	Resume(ctx context.Context, id string) (Trigger, error)
	// Remove deletes a binding; removed is false when there was none. An
	// occurrence being dispatched as it is removed may still fire.
	Remove(ctx context.Context, id string) (removed bool, err error)
}

// The types of bindings.
type (
	// Config configures bindings and their dispatcher
	// (hitch.Config.Triggers).
	Config = hitchtype.TriggerConfig
	// Spec defines a binding: when it fires, what each occurrence does,
	// and when it ends (see hitchtype.TriggerSpec).
	Spec = hitchtype.TriggerSpec
	// Trigger is a binding as the store holds it.
	Trigger = hitchtype.Trigger
	// Options adjust Create.
	Options = hitchtype.TriggerOptions
	// ListOptions filter and page List.
	ListOptions = hitchtype.TriggerListOptions
)

// Missed-occurrence policies of a binding (Spec.Missed).
const (
	// MissedOnce fires once for all the missed occurrences, then goes on
	// with the schedule (the default).
	MissedOnce = hitchtype.MissedOnce
	// MissedSkip fires none of them and goes on with the schedule.
	MissedSkip = hitchtype.MissedSkip
)

// Bounds of a binding and of the schedule tools.
const (
	// MaxIDBytes bounds a binding's id, so the run ids derived from it
	// stay within hitch.MaxRunIDBytes.
	MaxIDBytes = hitchtype.MaxTriggerIDBytes
	// MaxTextBytes bounds a binding's input or text.
	MaxTextBytes = hitchtype.MaxTriggerTextBytes
	// MaxWakeAhead bounds how far ahead schedule_wake may set a wake.
	MaxWakeAhead = hitchtype.MaxWakeAhead
)

// Defaults of bindings and their dispatcher (Config, Spec).
const (
	DefaultPoll        = hitchtype.DefaultTriggerPoll
	DefaultBatch       = hitchtype.DefaultTriggerBatch
	DefaultClaimTTL    = hitchtype.DefaultTriggerClaimTTL
	DefaultPerSession  = hitchtype.DefaultTriggersPerSession
	DefaultMinInterval = hitchtype.DefaultTriggerMinInterval
	DefaultGrace       = hitchtype.DefaultTriggerGrace
	DefaultMaxRetry    = hitchtype.DefaultTriggerMaxRetry
)

// Errors of bindings.
var (
	// ErrNotFound: no binding has that id.
	ErrNotFound = store.ErrTriggerNotFound
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
