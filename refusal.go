package hitch

import (
	"errors"

	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/sandbox"
)

// refusals are the documented errors of the runtime's commands whose text
// is fixed: it names nothing a caller sent (no id, path or text), so a face
// may show it as it is.
var refusals = []error{
	ErrNotFound, ErrUnknownCall, ErrSessionNotFound, ErrMessageNotFound,
	ErrRunnerBusy, ErrApprovalExpired, ErrEnded,
	approval.ErrBadCredential, approval.ErrOtherRequirement, approval.ErrNoApprovers,
	approval.ErrOtherApprovers, approval.ErrProofExpired,
	ErrNotUncertain, ErrReconciled, ErrNoApproval, ErrAnswered, ErrDeniedAtAnswer, ErrNoWorkspace, ErrUnknownAgent,
	ErrNoWake, ErrWakeDelivered, ErrWakeExpired, ErrNotPending, ErrCallCompleted, ErrCallTimedOut, ErrNotHeld, sandbox.ErrNotGranted,
	ErrSessionAgent, ErrBadRunID, ErrBadSessionID, ErrMessageTooLarge, ErrBadCursor, ErrBadFork,
}

// Refusal returns what a face may tell a caller of err: the documented
// error that err wraps (ErrNotFound, ErrAnswered …, or the
// *ForbiddenError), whose text is fixed and repeats nothing the caller sent
// — err's own text names ids and may hold secrets the caller typed. It
// returns nil when err is none of them: an internal error, whose text
// belongs in a log. A *MessageStateError is not among them: say its State.
func Refusal(err error) error {
	var f *ForbiddenError
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
