package tool

import "context"

// CallInfo identifies one run of a tool body. RunID and Call together name
// the call for good — the same after a crash and a replay — so a body can
// use them as an idempotency key with the system it acts on.
type CallInfo struct {
	RunID string
	// Call is the call's id within the run, such as "t3c1".
	Call string
	// Attempt counts runs of this body: above 1 only for replays of a
	// replayable tool.
	Attempt int
}

type callKey struct{}

// WithCall returns ctx carrying info; the engine calls it before a body.
func WithCall(ctx context.Context, info CallInfo) context.Context {
	return context.WithValue(ctx, callKey{}, info)
}

// CallFrom returns the call a body runs for, when ctx carries one.
func CallFrom(ctx context.Context) (CallInfo, bool) {
	info, ok := ctx.Value(callKey{}).(CallInfo)
	return info, ok
}
