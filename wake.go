package hitch

import (
	"context"
	"encoding/json"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/engine"
)

// Errors of armed wakes and pending calls.
var (
	// ErrNoWake: the run has no wake armed for the event (not yet, or
	// never). A delivery is not kept for a wake armed later.
	ErrNoWake = engine.ErrNoWake
	// ErrWakeDelivered: the event was already delivered to that wake; a
	// second delivery changes nothing.
	ErrWakeDelivered = engine.ErrWakeDelivered
	// ErrWakeExpired: the wake's deadline passed before the event came;
	// the model was told it did not come, and a late delivery is refused.
	ErrWakeExpired = engine.ErrWakeExpired
	// ErrNotPending: the call neither waits for a result from outside nor
	// is held by a hook.
	ErrNotPending = engine.ErrNotPending
	// ErrCallCompleted: the call already has its result from outside; a
	// second completion changes nothing.
	ErrCallCompleted = engine.ErrCallCompleted
	// ErrCallTimedOut: the pending call passed its deadline before its
	// result came; the model was told, and a late completion is refused.
	ErrCallTimedOut = engine.ErrCallTimedOut
	// ErrNotHeld: Execute names a call that is not held by a hook.
	ErrNotHeld = engine.ErrNotHeld
)

// Completion completes a pending or held call from outside the run.
type Completion = hitchtype.Completion

// Wait is one thing a parked run waits on, and until when.
type Wait = hitchtype.Wait

// Wake delivers event, with optional JSON data, to the wake that run armed
// for it (the built-in tool await_event), and drives the run on in the
// background: the model sees the event and its data as the call's result.
// Refusals, each of which changes nothing: ErrNoWake when no wake is armed
// for the event; ErrWakeDelivered when it was delivered already;
// ErrWakeExpired when its deadline has passed by the store's clock (the
// deadline leg is then recorded, if it was not yet, and the model told);
// ErrEnded, ErrNotFound, ErrRunnerBusy. by names the deliverer in the
// journal.
func (rt *Runtime) Wake(ctx context.Context, runID, event string, data json.RawMessage, by string) error {
	return rt.n.Wake(ctx, runID, event, data, by)
}

// CompleteCall completes a call from outside the run and drives the run
// on in the background. For an external call (tool.Info.External) waiting
// for its result, c.Output is the result the model sees, or c.Error a
// failure it sees. For a call held by a pre-tool hook, c.Execute releases
// it to run its body, and c.Output or c.Error stand for its result
// without running it. It is idempotent in effect: a call completed once
// refuses the next completion with ErrCallCompleted and changes nothing.
// Other refusals: ErrCallTimedOut (its deadline passed by the store's
// clock; the model is told it timed out), ErrApprovalExpired (a held
// call's request lapsed), ErrAnswered (a held call already approved or
// rejected), ErrNotHeld, ErrNotPending, ErrUnknownCall, ErrEnded,
// ErrNotFound, ErrRunnerBusy.
func (rt *Runtime) CompleteCall(ctx context.Context, runID string, c Completion) error {
	return rt.n.CompleteCall(ctx, runID, c)
}

// Waits lists what a run waits on, in call order: armed wakes (their event
// and deadline), pending external calls and calls held by a hook (until
// their deadlines), approval requests, sub-agent runs and uncertain
// effects. An ended run waits on nothing.
func (rt *Runtime) Waits(ctx context.Context, runID string) ([]Wait, error) {
	return rt.n.Waits(ctx, runID)
}
