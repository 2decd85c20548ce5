package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Tool is something a model may call. Implementations must be safe for
// concurrent use.
type Tool interface {
	// Info describes the tool. It must return the same value every time.
	Info() Info

	// Call runs the body on args, the raw JSON arguments the model sent. It
	// returns the text the model sees. An *ArgumentError means the body did
	// not run; an error wrapped by Uncertain means the effect may have
	// happened; any other error is a definite failure. Call must honour ctx:
	// the engine cancels it on timeout and on run cancellation.
	Call(ctx context.Context, args json.RawMessage) (string, error)
}

// Infinite, as a Timeout, leaves a tool body unbounded.
const Infinite time.Duration = -1

// Info is a tool's declaration.
type Info struct {
	Name        string
	Description string
	// Schema is the JSON Schema of the arguments; its root is an object.
	Schema json.RawMessage
	// Replay, when above zero, declares the body safe to run again after a
	// crash or timeout, up to Replay attempts in all. Zero means at most
	// once: an interrupted call becomes an uncertain effect.
	Replay int
	// Timeout bounds one run of the body. Zero takes the agent's default;
	// Infinite leaves it unbounded. For an External tool it bounds the
	// wait for the result instead (zero: Limits.PendingCallTimeout;
	// Infinite or more than Limits.MaxWait: MaxWait).
	Timeout time.Duration
	// External declares a tool whose work is done by another system:
	// hitch never runs its body. Starting a call journals it as pending
	// and parks the run until the result is given from outside
	// (Runtime.CompleteCall, hitch calls complete) or the timeout passes,
	// when the call is settled as timed out and the model is told.
	External bool
}

// ArgumentError reports arguments that do not fit the tool's schema. The
// body did not run; the message is shown to the model.
type ArgumentError struct {
	Tool   string
	Reason string
}

func (e *ArgumentError) Error() string {
	return fmt.Sprintf("invalid arguments for %s: %s", e.Tool, e.Reason)
}

// uncertainError marks an effect of unknown status.
type uncertainError struct{ err error }

func (e *uncertainError) Error() string { return "outcome unknown: " + e.err.Error() }
func (e *uncertainError) Unwrap() error { return e.err }

// Uncertain wraps err to say the body may have acted before it failed, for
// example a request whose response was lost. A nil err gives nil.
func Uncertain(err error) error {
	if err == nil {
		return nil
	}
	return &uncertainError{err: err}
}

// IsUncertain reports whether err says the effect may have happened.
func IsUncertain(err error) bool {
	var u *uncertainError
	return errors.As(err, &u)
}

// Hints are what a tool says about its own effects, such as the
// annotations an MCP server gives its tools. They are claims, not
// guarantees: trust them as far as whoever makes them.
type Hints struct {
	// ReadOnly: the tool does not change its environment.
	ReadOnly bool
	// Destructive: the tool may destroy or overwrite.
	Destructive bool
	// Idempotent: calling it again with the same arguments has no further
	// effect.
	Idempotent bool
	// OpenWorld: the tool reaches outside its own system (the web, other
	// services).
	OpenWorld bool
}

// Hinter is a tool that states Hints. The engine passes them to the policy
// with each call (policy.Action.Hints).
type Hinter interface {
	Hints() Hints
}

// Source is a list of tools that may change while runs go on, such as the
// tools of an MCP server (an *mcp.Client is one). The engine reads it at
// each model-turn boundary, records the tools the turn offers in the run's
// journal, and keeps that set for the whole turn: a change takes effect at
// the next turn, and a recovered run rebuilds its requests from the
// journal, not from the source.
type Source interface {
	// Tools returns the current list. It must be quick (no I/O) and safe
	// for concurrent use.
	Tools() []Tool
}
