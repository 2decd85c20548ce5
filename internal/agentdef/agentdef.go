// Package agentdef checks an agent's definition and builds the engine's
// agent from it: the body of the root package's Build.
package agentdef

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/hook"
	"github.com/hitch-dev/hitch/internal/engine"
	"github.com/hitch-dev/hitch/internal/ident"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/tool"
)

// Def is an agent's definition as hitch.Spec gives it, its sub-agents
// already built (a nil one is reported) and its typed answer's schema
// taken out.
type Def struct {
	Name         string
	Version      int
	Model        model.Model
	Instructions string
	Tools        []tool.Tool
	ToolSources  []tool.Source
	Policy       policy.Policy
	Limits       hitchtype.Limits
	Description  string
	SubAgents    []*engine.Agent
	Budget       *hitchtype.Budget
	Workspace    engine.Workspace
	Hooks        hook.Hooks
	// Typed is true when the answer is typed: Answer is its JSON Schema,
	// or AnswerErr says why there is none.
	Typed     bool
	Answer    json.RawMessage
	AnswerErr error
}

// Build checks d and returns the engine's agent, its version and limits
// with their defaults, or hitchtype.ConfigErrors naming every problem at
// once.
func Build(d Def) (*engine.Agent, error) {
	var errs hitchtype.ConfigErrors
	bad := func(field, format string, args ...any) {
		errs = append(errs, hitchtype.ConfigError{Field: field, Problem: fmt.Sprintf(format, args...)})
	}
	if !ident.Name(d.Name) {
		bad("Name", "%q: want 1–64 letters, digits, '.', '_' or '-', starting with a letter or digit", d.Name)
	}
	d.Version = cmp.Or(d.Version, 1)
	if d.Version < 1 {
		bad("Version", "%d: want 1 or more", d.Version)
	}
	if d.Model == nil {
		bad("Model", "is required")
	}
	if d.Policy == nil {
		bad("Policy", "is required: there is no implicit allow (policy.AllowAll is the explicit one)")
	}
	seen := map[string]bool{}
	for i, t := range d.Tools {
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
	for i, src := range d.ToolSources {
		if src == nil {
			bad(fmt.Sprintf("ToolSources[%d]", i), "is nil")
		}
	}
	d.Limits = d.Limits.WithDefaults()
	l := d.Limits
	intRange := func(field string, v, lo, hi int) {
		if v < lo || v > hi {
			bad("Limits."+field, "%d: want %d–%d", v, lo, hi)
		}
	}
	durRange := func(field string, v, lo, hi time.Duration, infinite bool) {
		if infinite && v == hitchtype.Infinite {
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
	if b := d.Budget; b != nil {
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
	for i, c := range d.SubAgents {
		switch {
		case c == nil:
			bad(fmt.Sprintf("SubAgents[%d]", i), "is nil")
			continue
		case seen[c.Name]:
			bad(fmt.Sprintf("SubAgents[%d]", i), "name %q is already a tool or a sub-agent", c.Name)
		case c.Name == d.Name:
			bad(fmt.Sprintf("SubAgents[%d]", i), "an agent cannot delegate to itself")
		}
		seen[c.Name] = true
		children = append(children, c)
	}
	var answer *engine.AnswerSpec
	if d.Typed {
		var err error
		switch {
		case d.AnswerErr != nil:
			bad("Answer", "no JSON Schema for the answer type: %v", d.AnswerErr)
		case len(d.Answer) == 0:
			bad("Answer", "has no JSON Schema")
		default:
			if answer, err = engine.NewAnswerSpec(d.Answer); err != nil {
				bad("Answer", "%v", err)
			}
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	ea := &engine.Agent{
		Name: d.Name, Version: d.Version, Model: d.Model, Instructions: d.Instructions,
		Tools: d.Tools, Policy: d.Policy, Answer: answer, Description: d.Description, Children: children, Budget: budget,
		Workspace: d.Workspace, Hooks: d.Hooks, Sources: d.ToolSources,
		Limits: l,
	}
	if err := ea.Prepare(); err != nil {
		return nil, hitchtype.ConfigErrors{{Field: "Tools", Problem: err.Error()}}
	}
	return ea, nil
}
