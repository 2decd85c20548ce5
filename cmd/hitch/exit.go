package main

import (
	"errors"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/client"
	"github.com/hitch-dev/hitch/config"
	"github.com/hitch-dev/hitch/sandbox"
	"github.com/hitch-dev/hitch/sessions"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/triggers"
)

// exitErrors gives the runtime's errors their exit codes: the one table a
// local command's refusals go by, as a server's go by api.Problems (the
// same refusal gets the same code either way).
var exitErrors = []struct {
	err  error
	code int
}{
	{hitch.ErrNotFound, exitNotFound},
	{hitch.ErrUnknownCall, exitNotFound},
	{sessions.ErrNotFound, exitNotFound},
	{sessions.ErrMessageNotFound, exitNotFound},
	{triggers.ErrNotFound, exitNotFound},

	{hitch.ErrForbidden, exitRefused},
	{hitch.ErrRunnerBusy, exitRefused},
	{hitch.ErrEnded, exitRefused},
	{hitch.ErrNotUncertain, exitRefused},
	{hitch.ErrReconciled, exitRefused},
	{hitch.ErrNoApproval, exitRefused},
	{hitch.ErrAnswered, exitRefused},
	{hitch.ErrApprovalExpired, exitRefused},
	{hitch.ErrDeniedAtAnswer, exitRefused},
	{hitch.ErrNoWorkspace, exitRefused},
	{sandbox.ErrNotGranted, exitRefused},
	{hitch.ErrNoWake, exitRefused},
	{hitch.ErrWakeDelivered, exitRefused},
	{hitch.ErrWakeExpired, exitRefused},
	{hitch.ErrNotPending, exitRefused},
	{hitch.ErrCallCompleted, exitRefused},
	{hitch.ErrCallTimedOut, exitRefused},
	{hitch.ErrNotHeld, exitRefused},
	{sessions.ErrAgent, exitRefused},
	{sessions.ErrTenant, exitRefused},
	{hitch.ErrUnknownAgent, exitRefused},
	{approval.ErrBadCredential, exitRefused},
	{approval.ErrOtherRequirement, exitRefused},
	{approval.ErrNoApprovers, exitRefused},
	{approval.ErrOtherApprovers, exitRefused},
	{approval.ErrProofExpired, exitRefused},

	{hitch.ErrBadRunID, exitUsage},
	{sessions.ErrBadID, exitUsage},
	{sessions.ErrMessageTooLarge, exitUsage},
	{hitch.ErrBadCursor, exitUsage},
	{hitch.ErrBadFork, exitUsage},
}

// exitOf is the exit code of a command's error: the code it carries, a
// server's problem by api.Problems, a damaged store 8, the runtime's errors
// by exitErrors (a refusal they do not list is refused, as a server refuses
// it), usage and configuration errors 2, anything else 1.
func exitOf(err error) int {
	var ce *codeError
	if errors.As(err, &ce) {
		return ce.code
	}
	var pe *client.Error
	if errors.As(err, &pe) {
		return pe.Exit()
	}
	if sqlite.IsCorrupt(err) {
		return exitCorrupt
	}
	var mse *sessions.MessageStateError
	if errors.As(err, &mse) {
		return exitRefused
	}
	for _, x := range exitErrors {
		if errors.Is(err, x.err) {
			return x.code
		}
	}
	if hitch.Refusal(err) != nil {
		return exitRefused
	}
	if config.IsProblem(err) || isUsage(err) {
		return exitUsage
	}
	return exitError
}
