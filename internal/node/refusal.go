package node

import (
	"errors"

	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/engine"
	"github.com/hitch-dev/hitch/internal/session"
	"github.com/hitch-dev/hitch/sandbox"
	"github.com/hitch-dev/hitch/store"
)

// refusals are the documented errors of the runtime's commands whose text
// is fixed: it names nothing a caller sent (no id, path or text), so a face
// may show it as it is.
var refusals = []error{
	store.ErrNotFound, engine.ErrUnknownCall, store.ErrSessionNotFound, store.ErrMessageNotFound,
	engine.ErrRunnerBusy, engine.ErrApprovalExpired, store.ErrEnded,
	approval.ErrBadCredential, approval.ErrOtherRequirement, approval.ErrNoApprovers,
	approval.ErrOtherApprovers, approval.ErrProofExpired,
	engine.ErrNotUncertain, engine.ErrReconciled, engine.ErrNoApproval, engine.ErrAnswered, engine.ErrDeniedAtAnswer,
	engine.ErrNoWorkspace, engine.ErrUnknownAgent,
	engine.ErrNoWake, engine.ErrWakeDelivered, engine.ErrWakeExpired, engine.ErrNotPending, engine.ErrCallCompleted,
	engine.ErrCallTimedOut, engine.ErrNotHeld, sandbox.ErrNotGranted,
	session.ErrSessionAgent, hitchtype.ErrBadRunID, hitchtype.ErrBadSessionID, session.ErrMessageTooLarge, store.ErrBadCursor,
	engine.ErrBadFork,
}

// Refusal returns the documented error err wraps, or its *ForbiddenError,
// or nil for any other error (hitch.Refusal).
func Refusal(err error) error {
	var f *hitchtype.ForbiddenError
	if errors.As(err, &f) {
		return f
	}
	for _, r := range refusals {
		if errors.Is(err, r) {
			return r
		}
	}
	return nil
}
