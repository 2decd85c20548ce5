package hitch

import (
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/hook"
	"github.com/hitch-dev/hitch/internal/agentdef"
	"github.com/hitch-dev/hitch/internal/engine"
	"github.com/hitch-dev/hitch/internal/node"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/sandbox"
	"github.com/hitch-dev/hitch/tool"
)

// Spec describes an agent. Build checks it.
type Spec struct {
	// Name identifies the agent; stored runs record it. Letters, digits,
	// '-', '_' and '.', 1–64 characters.
	Name string
	// Version is recorded by every run, which continues only under the same
	// name and version. Change it when a change must not continue older
	// runs. Default 1.
	Version int
	// Model answers the agent's turns. Required.
	Model model.Model
	// Instructions are the system instructions of every turn.
	Instructions string
	// Tools are what the model may call.
	Tools []tool.Tool
	// ToolSources are tool lists that may change while runs go on, such
	// as MCP servers (an *mcp.Client is one). Each turn offers Tools, then
	// the sources' tools as of the turn's start; a change takes effect at
	// the next turn. The journal records the tools each turn offered, so
	// a recovered run rebuilds its requests from it, not from the source.
	// A source's tool named like one of Tools or SubAgents is left out.
	ToolSources []tool.Source
	// Policy decides every call. Required: there is no implicit allow
	// (policy.AllowAll is the explicit one).
	Policy policy.Policy
	// Limits bound each run; zero fields take their defaults.
	Limits Limits
	// Description tells a parent agent's model what this agent does, when
	// it is used as a sub-agent.
	Description string
	// SubAgents are agents this one may delegate to. Each is declared to
	// the model like a tool taking a prompt; calling it starts a child run
	// in the same store once the policy allows it (policy.StartAgent). The
	// child's answer is the call's result.
	SubAgents []*Agent
	// Budget is the family budget of a root run of this agent, shared with
	// every sub-agent run below it and stored with the root. Every charge
	// is reserved before the work it pays for; when a reservation would go
	// past a limit the run ends budget_exhausted, naming which. It applies
	// only when this agent starts a root run.
	Budget *Budget
	// Workspace, when set, gives each run its own sandbox and the tools
	// bound to it, so roots granted to one run (Runtime.GrantRoot) reach no
	// other. Tools must still list tools of the same names, which declare
	// them to the model. The config file sets this for the built-in tools.
	Workspace func() (sandbox.Sandbox, []tool.Tool, error)
	// Hooks, when set, watch and shape each run's turn loop: before model
	// calls, around tool bodies, and on the final answer (see package
	// hook). Embed hook.Base and override what you need.
	Hooks hook.Hooks
	// Approvers decide who may answer this agent's approval requests. An
	// agent without approvers refuses every answer: its requests wait
	// until they expire. They are not stored: a recovered run is answered
	// with the approvers of the agent value it was recovered with.
	Approvers approval.Approvers
	// Answer, when set, types the final answer: the model is asked for JSON
	// matching its schema, and a text that does not decode gets a
	// corrective turn (Limits.AnswerAttempts). Build one with AnswerOf or
	// AnswerSchema.
	Answer *Answer
}

// Budget limits a family of runs; see hitchtype.Budget.
type Budget = hitchtype.Budget

// Answer is a typed final answer's schema.
type Answer struct {
	schema json.RawMessage
	err    error
}

// AnswerOf types the final answer as T; T's JSON Schema is inferred. A
// completed run's Outcome.Answer is then T's JSON (see DecodeAnswer).
func AnswerOf[T any]() *Answer {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		return &Answer{err: err}
	}
	b, err := json.Marshal(s)
	return &Answer{schema: b, err: err}
}

// AnswerSchema types the final answer with a JSON Schema. A schema whose
// root is not an object is sent to the provider wrapped as {"answer": ...}
// and unwrapped before it is stored.
func AnswerSchema(schema json.RawMessage) *Answer { return &Answer{schema: schema} }

// DecodeAnswer decodes a completed run's typed answer into T. A run that
// stopped at max_turns has no final answer (its Answer is the last reply's
// text) and gives an error.
func DecodeAnswer[T any](run Run) (T, error) { return hitchtype.DecodeAnswer[T](run) }

// Limits bound one run; see hitchtype.Limits.
type Limits = hitchtype.Limits

// ConfigError is one problem Build found, naming its Spec field (see
// hitchtype.ConfigError).
type ConfigError = hitchtype.ConfigError

// ConfigErrors is every problem Build found, in field order.
type ConfigErrors = hitchtype.ConfigErrors

// Agent is a validated agent definition, safe to share.
type Agent struct {
	def agentdef.Def // version and limits defaulted
	n   *node.Agent
}

// engine returns the engine's agent, nil for a nil agent (which the
// commands refuse).
func (a *Agent) engine() *engine.Agent {
	if a == nil {
		return nil
	}
	return a.n.Eng
}

// Name returns the agent's name; "" for a nil agent, which the commands
// refuse.
func (a *Agent) Name() string {
	if a == nil {
		return ""
	}
	return a.def.Name
}

// Version returns the agent's version.
func (a *Agent) Version() int { return a.def.Version }

// Limits returns the agent's limits, defaults filled in.
func (a *Agent) Limits() Limits { return a.def.Limits }

// Build checks spec and returns the agent, or ConfigErrors naming every
// problem at once.
func Build(spec Spec) (*Agent, error) {
	d := agentdef.Def{Name: spec.Name, Version: spec.Version, Model: spec.Model, Instructions: spec.Instructions,
		Tools: spec.Tools, ToolSources: spec.ToolSources, Policy: spec.Policy, Limits: spec.Limits, Description: spec.Description,
		Budget: spec.Budget, Workspace: engine.Workspace(spec.Workspace), Hooks: spec.Hooks}
	var subs []*node.Agent
	for _, c := range spec.SubAgents {
		if c == nil {
			d.SubAgents = append(d.SubAgents, nil)
			continue
		}
		d.SubAgents, subs = append(d.SubAgents, c.n.Eng), append(subs, c.n)
	}
	if spec.Answer != nil {
		d.Typed, d.Answer, d.AnswerErr = true, spec.Answer.schema, spec.Answer.err
	}
	ea, err := agentdef.Build(d)
	if err != nil {
		return nil, err
	}
	d.Version, d.Limits = ea.Version, d.Limits.WithDefaults()
	a := &Agent{def: d, n: &node.Agent{Eng: ea, Approvers: spec.Approvers, Subs: subs}}
	a.n.Def = a
	return a, nil
}

// Describe returns what the agent's definition says, without secrets.
func (a *Agent) Describe() AgentDescription { return agentdef.Describe(a.def, a.n.Approvers) }

// The description of an agent: the types are hitchtype's.
type (
	// AgentDescription is what an agent's definition says, for people to
	// read (GET /v1/agents/{name}, the console's agent page). It holds no
	// secret: no model credentials, no approver secrets, no values of
	// variables.
	AgentDescription = hitchtype.AgentDescription
	// ToolDescription is one tool of an agent.
	ToolDescription = hitchtype.ToolDescription
	// PolicyDescription is what an agent's policy decides.
	PolicyDescription = hitchtype.PolicyDescription
	// ApproverDescription is one approver: a name and what it may answer.
	ApproverDescription = hitchtype.ApproverDescription
)
