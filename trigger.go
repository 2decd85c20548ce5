package hitch

import "context"

// DispatchTriggers claims the occurrences that are due by the store clock,
// at most Config.Triggers.Batch of them, and dispatches each: claim,
// dispatch, retire. A run target's run is created queued (Detached) for a
// sweeper to drive; a session target's message is sent. Each dispatch
// carries OccurrenceID, so one repeated after a crash starts or sends
// nothing new. A dispatch that fails is given back and tried again later,
// doubling from Config.Triggers.Poll up to triggers.DefaultMaxRetry. It
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
