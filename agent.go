package hitch

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/hook"
	"github.com/hitch-dev/hitch/internal/engine"
	"github.com/hitch-dev/hitch/internal/node"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/sandbox"
	"github.com/hitch-dev/hitch/store"
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
func DecodeAnswer[T any](run Run) (T, error) {
	var v T
	if run.Outcome == nil || run.Status != hitchtype.StatusCompleted {
		return v, fmt.Errorf("decode answer of %s: the run has not completed (%s)", run.ID, run.Status)
	}
	if run.Outcome.Reason == "max_turns" {
		return v, fmt.Errorf("decode answer of %s: the run stopped at max_turns before a final answer", run.ID)
	}
	if err := json.Unmarshal([]byte(run.Outcome.Answer), &v); err != nil {
		return v, fmt.Errorf("decode answer of %s: %w", run.ID, err)
	}
	return v, nil
}

// Limits bound one run; see hitchtype.Limits.
type Limits = hitchtype.Limits

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// ConfigError is one problem Build found, naming its Spec field (see
// hitchtype.ConfigError).
type ConfigError = hitchtype.ConfigError

// ConfigErrors is every problem Build found, in field order.
type ConfigErrors = hitchtype.ConfigErrors

// Agent is a validated agent definition, safe to share.
type Agent struct {
	spec Spec
	eng  *engine.Agent
	n    *node.Agent
}

// Name returns the agent's name.
func (a *Agent) Name() string { return a.spec.Name }

// Version returns the agent's version.
func (a *Agent) Version() int { return a.spec.Version }

// Limits returns the agent's limits, defaults filled in.
func (a *Agent) Limits() Limits { return a.spec.Limits }

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Build checks spec and returns the agent, or ConfigErrors naming every
// problem at once.
func Build(spec Spec) (*Agent, error) {
	var errs ConfigErrors
	bad := func(field, format string, args ...any) {
		errs = append(errs, ConfigError{Field: field, Problem: fmt.Sprintf(format, args...)})
	}
	if !namePattern.MatchString(spec.Name) {
		bad("Name", "%q: want 1–64 letters, digits, '.', '_' or '-', starting with a letter or digit", spec.Name)
	}
	spec.Version = or(spec.Version, 1)
	if spec.Version < 1 {
		bad("Version", "%d: want 1 or more", spec.Version)
	}
	if spec.Model == nil {
		bad("Model", "is required")
	}
	if spec.Policy == nil {
		bad("Policy", "is required: there is no implicit allow (policy.AllowAll is the explicit one)")
	}
	seen := map[string]bool{}
	for i, t := range spec.Tools {
		if t == nil {
			bad(fmt.Sprintf("Tools[%d]", i), "is nil")
			continue
		}
		info := t.Info()
		switch {
		case info.Name == "":
			bad(fmt.Sprintf("Tools[%d]", i), "has no name")
		case seen[info.Name]:
			bad(fmt.Sprintf("Tools[%d]", i), "name %q is used twice", info.Name)
		}
		seen[info.Name] = true
		if info.Replay < 0 {
			bad(fmt.Sprintf("Tools[%d] (%s)", i, info.Name), "replay %d: want 0 (at most once) or more", info.Replay)
		}
	}
	for i, src := range spec.ToolSources {
		if src == nil {
			bad(fmt.Sprintf("ToolSources[%d]", i), "is nil")
		}
	}
	spec.Limits = spec.Limits.WithDefaults()
	l := spec.Limits
	intRange := func(field string, v, lo, hi int) {
		if v < lo || v > hi {
			bad("Limits."+field, "%d: want %d–%d", v, lo, hi)
		}
	}
	durRange := func(field string, v, lo, hi time.Duration, infinite bool) {
		if infinite && v == Infinite {
			return
		}
		if v < lo || v > hi {
			extra := ""
			if infinite {
				extra = ", or Infinite"
			}
			bad("Limits."+field, "%s: want %s–%s%s", v, lo, hi, extra)
		}
	}
	intRange("ModelAttempts", l.ModelAttempts, 1, 10000)
	durRange("RetryDelay", l.RetryDelay, time.Millisecond, time.Minute, false)
	durRange("MaxRetryAfter", l.MaxRetryAfter, 0, time.Hour, false)
	durRange("ModelTimeout", l.ModelTimeout, time.Second, 24*time.Hour, true)
	durRange("PolicyTimeout", l.PolicyTimeout, time.Millisecond, time.Minute, false)
	durRange("ToolTimeout", l.ToolTimeout, time.Millisecond, 24*time.Hour, true)
	intRange("ToolConcurrency", l.ToolConcurrency, 1, 64)
	intRange("MaxToolResult", l.MaxToolResult, 1, 64<<20)
	durRange("CommandWait", l.CommandWait, 0, time.Minute, false)
	intRange("AnswerAttempts", l.AnswerAttempts, 1, 100)
	durRange("ApprovalExpiry", l.ApprovalExpiry, time.Second, 365*24*time.Hour, true)
	intRange("MaxChildren", l.MaxChildren, 1, 999)
	intRange("MaxDepth", l.MaxDepth, 1, 16)
	durRange("HookTimeout", l.HookTimeout, time.Millisecond, time.Minute, false)
	intRange("KeepTurns", l.KeepTurns, 1, 1000)
	durRange("MaxWait", l.MaxWait, time.Second, 365*24*time.Hour, false)
	durRange("PendingCallTimeout", l.PendingCallTimeout, time.Second, max(l.MaxWait, time.Second), false)
	if l.ContextWindow < 0 {
		bad("Limits.ContextWindow", "%d: want 0 (never compact) or a window in tokens", l.ContextWindow)
	}
	var budget *store.Budget
	if b := spec.Budget; b != nil {
		for _, c := range []struct {
			field string
			v     int64
		}{{"Tokens", b.Tokens}, {"ModelCalls", b.ModelCalls}, {"ToolCalls", b.ToolCalls}} {
			if c.v < 0 {
				bad("Budget."+c.field, "%d: want 0 (none) or more", c.v)
			}
		}
		// The store keeps micro-USD and milliseconds: a smaller non-zero
		// limit would round to 0, which means none.
		if math.IsNaN(b.USD) || math.IsInf(b.USD, 0) || b.USD < 0 || (b.USD > 0 && b.USD < 1e-6) || b.USD > math.MaxInt64/1e6 {
			bad("Budget.USD", "%v: want 0 (none) or from 0.000001 to %g", b.USD, float64(math.MaxInt64/1e6))
		}
		if b.WallTime < 0 || (b.WallTime > 0 && b.WallTime < time.Millisecond) {
			bad("Budget.WallTime", "%s: want 0 (none) or 1ms or more", b.WallTime)
		}
		budget = &store.Budget{Tokens: b.Tokens, MicroUSD: int64(math.Round(b.USD * 1e6)), ModelCalls: b.ModelCalls, ToolCalls: b.ToolCalls, WallMS: b.WallTime.Milliseconds()}
	}
	if l.MaxTokens < 0 {
		bad("Limits.MaxTokens", "%d: want 0 (none) or more", l.MaxTokens)
	}
	var children []*engine.Agent
	var subs []*node.Agent
	for i, c := range spec.SubAgents {
		switch {
		case c == nil:
			bad(fmt.Sprintf("SubAgents[%d]", i), "is nil")
			continue
		case seen[c.Name()]:
			bad(fmt.Sprintf("SubAgents[%d]", i), "name %q is already a tool or a sub-agent", c.Name())
		case c.Name() == spec.Name:
			bad(fmt.Sprintf("SubAgents[%d]", i), "an agent cannot delegate to itself")
		}
		seen[c.Name()] = true
		children = append(children, c.eng)
		subs = append(subs, c.n)
	}
	var answer *engine.AnswerSpec
	if spec.Answer != nil {
		var err error
		switch {
		case spec.Answer.err != nil:
			bad("Answer", "no JSON Schema for the answer type: %v", spec.Answer.err)
		case len(spec.Answer.schema) == 0:
			bad("Answer", "has no JSON Schema")
		default:
			if answer, err = engine.NewAnswerSpec(spec.Answer.schema); err != nil {
				bad("Answer", "%v", err)
			}
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	ea := &engine.Agent{
		Name: spec.Name, Version: spec.Version, Model: spec.Model, Instructions: spec.Instructions,
		Tools: spec.Tools, Policy: spec.Policy, Answer: answer, Description: spec.Description, Children: children, Budget: budget,
		Workspace: engine.Workspace(spec.Workspace), Hooks: spec.Hooks, Sources: spec.ToolSources,
		Limits: l,
	}
	if err := ea.Prepare(); err != nil {
		return nil, ConfigErrors{{Field: "Tools", Problem: err.Error()}}
	}
	a := &Agent{spec: spec, eng: ea, n: &node.Agent{Eng: ea, Approvers: spec.Approvers, Subs: subs}}
	a.n.Def = a
	return a, nil
}
