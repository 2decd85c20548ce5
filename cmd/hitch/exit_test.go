package main

import (
	"fmt"
	"testing"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/sandbox"
	"github.com/hitch-dev/hitch/sessions"
)

// TestRefusalsGetTheirExitCodes: the runtime's refusals, wrapped as a
// command returns them, exit with the code docs/cli.md gives them, the
// code a server's problem for the same refusal gives.
func TestRefusalsGetTheirExitCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		code int
	}{
		{&hitch.ForbiddenError{Op: "Cancel", Principal: "eve", Role: hitch.RoleViewer, Need: hitch.RoleOperator}, exitRefused},
		{hitch.ErrNotFound, exitNotFound},
		{sessions.ErrNotFound, exitNotFound},
		{sessions.ErrMessageNotFound, exitNotFound},
		{hitch.ErrUnknownCall, exitNotFound},
		{hitch.ErrRunnerBusy, exitRefused},
		{hitch.ErrEnded, exitRefused},
		{sessions.ErrAgent, exitRefused},
		{approval.ErrBadCredential, exitRefused},
		{sandbox.ErrNotGranted, exitRefused},
		{hitch.ErrBadRunID, exitUsage},
		{sessions.ErrBadID, exitUsage},
		{sessions.ErrMessageTooLarge, exitUsage},
		{hitch.ErrBadCursor, exitUsage},
		{fmt.Errorf("disk on fire"), exitError},
	} {
		err := fmt.Errorf("command: %w", tc.err)
		if got := exitOf(err); got != tc.code {
			t.Errorf("%v: exit %d, want %d", err, got, tc.code)
		}
	}
}
