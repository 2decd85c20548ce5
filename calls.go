package hitch

import (
	"context"

	"github.com/hitch-dev/hitch/hitchtype"
)

// CallRecord is one tool call's lifecycle as its run's journal tells it.
type CallRecord = hitchtype.CallRecord

// Call returns the record of one tool call of a run, by the journal's id
// of it ("t3c1"): the tool and its arguments, the decision and the
// approval's answer, when its body started and on which node, and how it
// ended. It reads the journal backwards from its end a page at a time
// until it reaches the reply that asked for the call, so a recent call of
// a long journal is cheap. ErrUnknownCall when the run has no such call.
func (rt *Runtime) Call(ctx context.Context, runID, key string) (CallRecord, error) {
	return rt.n.Call(ctx, runID, key)
}
