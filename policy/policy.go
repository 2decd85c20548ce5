package policy

import (
	"context"
	"encoding/json"

	"github.com/hitch-dev/hitch/tool"
)

// Verdict is what a policy decided.
type Verdict string

// The verdicts.
const (
	Allow           Verdict = "allow"
	Deny            Verdict = "deny"
	RequireApproval Verdict = "approval"
)

// ActionKind says what a call would do.
type ActionKind string

// The action kinds.
const (
	CallTool   ActionKind = "tool"        // run a tool body
	StartAgent ActionKind = "start_agent" // start a sub-agent run
)

// Action is what a policy is asked about.
type Action struct {
	Kind  ActionKind
	RunID string
	// RootID is the run's root (its own id for a root run); Depth is 0 for
	// a root run and one more for each level of sub-agent.
	RootID string
	Depth  int
	// RunMetadata is the run's metadata, if any.
	RunMetadata map[string]string
	// Agent and AgentVersion name the agent the run belongs to.
	Agent        string
	AgentVersion int
	// SessionID and SessionMetadata describe the session whose submission
	// the run works, if any.
	SessionID       string
	SessionMetadata map[string]string
	// Tool is the tool (or sub-agent) name the model called.
	Tool string
	// Arguments are the call's arguments, already checked to be valid JSON.
	Arguments json.RawMessage
	// Hints are what the tool says about its effects (an MCP server's
	// annotations: destructive, read-only …); nil when it says nothing.
	// They are the tool's claims: weigh them as far as you trust it.
	Hints *tool.Hints
	// Requirement is the requirement an approval has already answered,
	// when the policy is asked again at approval time; empty otherwise.
	Requirement string
}

// Decision is a policy's answer.
type Decision struct {
	Verdict Verdict
	// Reason explains a denial to the model, and an approval request to the
	// people asked.
	Reason string
	// Requirement names who must approve, for RequireApproval.
	Requirement string
	// Rule names what decided, for the people who read the journal: a
	// rule of Rules by its place and name ("policy rule 2 (\"shell\")").
	// A policy written in Go may leave it empty.
	Rule string
}

// Policy decides actions. Decide must be safe for concurrent use and should
// be quick: the engine bounds it by the agent's policy timeout and treats an
// error or timeout as a refusal that stops the run.
type Policy interface {
	Decide(ctx context.Context, a Action) (Decision, error)
}

// Func adapts a function to Policy.
type Func func(ctx context.Context, a Action) (Decision, error)

// Decide calls f.
func (f Func) Decide(ctx context.Context, a Action) (Decision, error) { return f(ctx, a) }

// AllowAll allows every action. It is the explicit way to run without a
// policy.
func AllowAll() Policy { return allowAll{} }

// DenyAll denies every action with reason.
func DenyAll(reason string) Policy { return denyAll{reason: reason} }

// Constant reports whether p is AllowAll or DenyAll, whose decision is fixed
// and returned at once: asking it needs no timeout.
func Constant(p Policy) bool {
	switch p.(type) {
	case allowAll, denyAll:
		return true
	}
	return false
}
