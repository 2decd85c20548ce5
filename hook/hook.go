// Package hook lets code watch and shape a run at fixed points of its turn
// loop: before each model call, before and after each tool body, and on the
// final answer.
//
// Implement Hooks by embedding Base and overriding the methods you need;
// new methods added to Hooks later get Base's do-nothing behaviour, so
// existing hooks keep compiling. Each call is bounded by the agent's hook
// timeout. What a hook decides is journaled, so a recovered run replays
// the same history without asking again.
//
// Failure policy: a PreGenerate, PreTool or PostTurn hook that errs or
// times out fails closed (the run fails, the call is denied, the answer is
// refused); a PostTool hook that errs fails open (the body's own result
// stands).
package hook

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
)

// Hooks are the points a run can be watched and shaped at. Methods must be
// safe for concurrent use: one Hooks value serves every run of an agent.
type Hooks interface {
	// PreGenerate runs before each model call. It may add text to the
	// turn's instructions (journaled with the turn). An error stops the run.
	PreGenerate(ctx context.Context, in Generate) (extra string, err error)
	// PreTool runs after the policy allowed a call and before its body
	// starts. It may let it run (with rewritten arguments), deny it, or
	// hold it for a person.
	PreTool(ctx context.Context, call Call) (ToolVerdict, error)
	// PostTool runs after a body returned and before its result is
	// journaled. It may rewrite the result the model sees.
	PostTool(ctx context.Context, call Call, result Result) (Result, error)
	// PostTurn validates a final answer before the run completes. A
	// refusal gives the model a corrective turn with the reason, within
	// the agent's answer attempts.
	PostTurn(ctx context.Context, answer Answer) (Verdict, error)
}

// Generate describes a model call about to be made.
type Generate struct {
	RunID string
	Agent string
	// Turn is the number of the turn about to be asked for, from 1.
	Turn int
}

// Call is a tool call.
type Call struct {
	RunID     string
	Agent     string
	ID        string // the call's id in the run, such as "t2c1"
	Tool      string
	Arguments json.RawMessage
}

// Result is what a body returned, as the model will see it.
type Result struct {
	Output  string
	IsError bool
}

// Answer is a final answer about to complete a run: its text, or for a
// typed answer, its JSON.
type Answer struct {
	RunID string
	Agent string
	Text  string
}

// Action is what PreTool decides.
type Action string

// The actions.
const (
	Run  Action = "run"  // run the body (with Arguments if set)
	Deny Action = "deny" // do not run it; the model sees Reason
	Hold Action = "hold" // wait for a person: an approval request with Requirement
)

// ToolVerdict is PreTool's decision.
type ToolVerdict struct {
	Action Action
	// Arguments, with Run, replace the call's arguments for the body.
	Arguments json.RawMessage
	// Reason explains a denial or a hold.
	Reason string
	// Requirement names who may release a held call (approval.Approvers).
	Requirement string
}

// Verdict is PostTurn's decision.
type Verdict struct {
	Valid  bool
	Reason string // why an answer is refused, shown to the model
	// Message, when set with a refusal, is the corrective message the
	// model sees, verbatim, instead of the generic one built from Reason.
	Message string
}

// TriggerHooks are hooks around a trigger binding's dispatch, asked for
// each occurrence that would start a run of the agent or send a message to
// a session of it. A Hooks value may implement them; Base does, letting
// everything through.
//
// PreTrigger fails closed: an error skips the occurrence, as a Deny does,
// and the binding records the skip with its reason. PostTrigger only
// observes: its error is ignored. A dispatch repeated after a crash asks
// them again.
type TriggerHooks interface {
	// PreTrigger runs before an occurrence is dispatched. It may let it go
	// (with a rewritten input or message) or deny it.
	PreTrigger(ctx context.Context, t Trigger) (TriggerVerdict, error)
	// PostTrigger runs once the occurrence was dispatched.
	PostTrigger(ctx context.Context, t Trigger, d Dispatched) error
}

// Trigger is one occurrence of a binding about to be dispatched.
type Trigger struct {
	// ID names the binding; Occurrence is the time it was due.
	ID         string
	Occurrence time.Time
	// Agent is the agent a run target starts, or the agent of the session
	// a session target sends to.
	Agent string
	// Session is a session target's session; "" for a run target.
	Session string
	// Input is the run's input, or the message's text.
	Input string
}

// TriggerVerdict is PreTrigger's decision.
type TriggerVerdict struct {
	// Action is Run (dispatch) or Deny (skip this occurrence).
	Action Action
	// Input, with Run, replaces the run's input or the message's text
	// when not empty.
	Input string
	// Reason explains a denial; the binding records it.
	Reason string
}

// Dispatched is what an occurrence's dispatch made: the run it started, or
// the message it sent (whose submission's run may start later).
type Dispatched struct {
	RunID     string
	MessageID string
}

// Base implements every hook as a no-op that lets everything through.
type Base struct{}

var (
	_ Hooks        = Base{}
	_ TriggerHooks = Base{}
)

// PreGenerate adds nothing.
func (Base) PreGenerate(context.Context, Generate) (string, error) { return "", nil }

// PreTool lets the call run as asked.
func (Base) PreTool(context.Context, Call) (ToolVerdict, error) { return ToolVerdict{Action: Run}, nil }

// PostTool keeps the result.
func (Base) PostTool(_ context.Context, _ Call, r Result) (Result, error) { return r, nil }

// PostTurn accepts the answer.
func (Base) PostTurn(context.Context, Answer) (Verdict, error) { return Verdict{Valid: true}, nil }

// PreTrigger lets the occurrence be dispatched as it is.
func (Base) PreTrigger(context.Context, Trigger) (TriggerVerdict, error) {
	return TriggerVerdict{Action: Run}, nil
}

// PostTrigger does nothing.
func (Base) PostTrigger(context.Context, Trigger, Dispatched) error { return nil }

// Info describes one named hook for people; see hitchtype.HookInfo.
type Info = hitchtype.HookInfo

// Lister is implemented by Hooks made of named hooks (a config's): List
// returns them in the order they run, point by point.
type Lister interface {
	List() []Info
}
