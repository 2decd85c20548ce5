package hitch

import (
	"encoding/json"
	"slices"
	"sort"
	"time"

	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/hook"
	"github.com/hitch-dev/hitch/policy"
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
	HookList []hook.Info
}

// ToolDescription is one tool of an agent.
type ToolDescription struct {
	Name        string
	Description string
	Schema      json.RawMessage
	// Replay above zero: the body may run again after a crash, up to
	// Replay attempts in all.
	Replay int
	// Timeout is the tool's own bound; 0 takes the agent's.
	Timeout time.Duration
	// External: another system does the work.
	External bool
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

// Describe returns what the agent's definition says, without secrets.
func (a *Agent) Describe() AgentDescription {
	s := a.spec
	d := AgentDescription{Name: s.Name, Version: s.Version, Description: s.Description, Instructions: s.Instructions,
		Limits: s.Limits, Workspace: s.Workspace != nil, Hooks: s.Hooks != nil}
	if l, ok := s.Hooks.(hook.Lister); ok {
		d.HookList = l.List()
	}
	if s.Model != nil {
		d.Model = s.Model.Name()
	}
	seen := map[string]bool{}
	for _, t := range s.Tools {
		info := t.Info()
		seen[info.Name] = true
		d.Tools = append(d.Tools, ToolDescription{Name: info.Name, Description: info.Description, Schema: info.Schema,
			Replay: info.Replay, Timeout: info.Timeout, External: info.External})
	}
	var sourced []ToolDescription
	for _, src := range s.ToolSources {
		for _, t := range src.Tools() {
			info := t.Info()
			if seen[info.Name] {
				continue
			}
			seen[info.Name] = true
			sourced = append(sourced, ToolDescription{Name: info.Name, Description: info.Description, Schema: info.Schema,
				Replay: info.Replay, Timeout: info.Timeout, External: info.External, FromSource: true})
		}
	}
	sort.Slice(sourced, func(i, j int) bool { return sourced[i].Name < sourced[j].Name })
	d.Tools = append(d.Tools, sourced...)
	for _, c := range s.SubAgents {
		d.SubAgents = append(d.SubAgents, c.Name())
	}
	d.Policy = PolicyDescription{Kind: "go"}
	if pd, ok := s.Policy.(policy.Describer); ok {
		desc := pd.Describe()
		d.Policy = PolicyDescription{Kind: desc.Kind, Reason: desc.Reason, Rules: desc.Rules}
	}
	if s.Budget != nil {
		b := *s.Budget
		d.Budget = &b
	}
	d.ApproversKind = "none"
	if s.Approvers != nil {
		d.ApproversKind = "go"
		if l, ok := s.Approvers.(approval.Lister); ok {
			d.ApproversKind = "listed"
			for _, m := range l.List() {
				d.Approvers = append(d.Approvers, ApproverDescription{Name: m.Name, Requirements: slices.Clone(m.Requirements)})
			}
		}
	}
	if s.Answer != nil && len(s.Answer.schema) > 0 {
		d.Answer = slices.Clone(s.Answer.schema)
	}
	return d
}
