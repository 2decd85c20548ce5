package hitchtype

import (
	"encoding/json"

	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/tool"
)

// AgentDescription is what an agent's definition says, for people to read
// (GET /v1/agents/{name}, the console's agent page). It holds no secret:
// no model credentials, no approver secrets, no values of variables.
type AgentDescription struct {
	Name         string
	Version      int
	Description  string
	Model        string // the model's name, such as "openai/gpt-4o-mini"
	Instructions string
	// Tools are the agent's tools, then those its tool sources offer now.
	Tools []ToolDescription
	// SubAgents name the agents it may delegate to.
	SubAgents []string
	Policy    PolicyDescription
	// Limits are the run limits, defaults filled in.
	Limits Limits
	// Budget is the family budget of a root run; nil when none.
	Budget *Budget
	// ApproversKind is "none" when the agent has no approvers of its own
	// (a sub-agent then answers with its parent's), "listed" when
	// Approvers lists them, "go" when they cannot list themselves (a Go
	// implementation without approval.Lister).
	ApproversKind string
	Approvers     []ApproverDescription
	// Answer is the typed answer's JSON Schema; nil when the answer is text.
	Answer json.RawMessage
	// Workspace says each run gets its own sandbox; Hooks, that hooks
	// shape its turns.
	Workspace, Hooks bool
	// HookList names the hooks, in the order they run, when they list
	// themselves (hook.Lister: a config's hooks do).
	HookList []HookInfo
}

// ToolDescription is one tool of an agent: its declaration, and whether
// a tool source offers it.
type ToolDescription struct {
	tool.Info
	// FromSource: a tool source (an MCP server) offers it; its list may
	// change while runs go on.
	FromSource bool
}

// PolicyDescription is what an agent's policy decides. Kind is
// "allow_all", "deny_all", "rules", or "go" for a policy written in Go that
// does not describe itself (policy.Describer).
type PolicyDescription struct {
	Kind   string
	Reason string
	Rules  []policy.Rule
}

// ApproverDescription is one approver: a name and what it may answer.
type ApproverDescription struct {
	Name         string
	Requirements []string
}

// HookInfo describes one named hook for people: where it runs, what it is
// and in which order (hitch agents lists them; hook.Lister gives them).
type HookInfo struct {
	Name     string   `json:"name"`
	Point    string   `json:"point"`
	Priority int      `json:"priority"`
	OnError  string   `json:"on_error"`
	Kind     string   `json:"kind"`   // command or webhook
	Target   string   `json:"target"` // the command line, or the URL
	Match    []string `json:"match,omitempty"`
	When     string   `json:"when,omitempty"`
}
