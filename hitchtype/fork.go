package hitchtype

import "github.com/hitch-dev/hitch/model"

// ForkOptions adjust a fork (hitch.Runtime.Fork). The zero value forks
// the run as it was, on the agent version it ran.
type ForkOptions struct {
	// ID names the fork (see CheckRunID); forking with the same id again
	// creates nothing. Empty means a fresh id.
	ID string
	// Version, when set, is another registered version of the run's
	// agent that the fork runs from the fork position on: another model,
	// tools or instructions. 0 keeps the version the run ran.
	Version int
	// Model, when set, names a model (its Name) that answers the fork's
	// turns from the fork position on in place of its agent's, on the
	// same version: the model of any agent this runtime drives (a route
	// too). A name two different models share is refused.
	Model string
	// Instructions, when set, replace the run's caller layer of
	// instructions (hitch.WithInstructions) from the fork position on.
	Instructions string
	// Reply, when set, replaces the model reply at the fork position,
	// which must hold one: its text, and its tool calls, which the fork
	// then decides and runs.
	Reply *model.Reply
	// Message, when set, is a user message the model sees after the
	// history, at its next request.
	Message string
	// Detached leaves the fork queued for a worker instead of driving it
	// here.
	Detached bool
}
