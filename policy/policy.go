package policy

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/bmatcuk/doublestar/v4"
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
	Agent string
	// Tool is the tool (or sub-agent) name the model called.
	Tool string
	// Arguments are the call's arguments, already checked to be valid JSON.
	Arguments json.RawMessage
}

// Decision is a policy's answer.
type Decision struct {
	Verdict Verdict
	// Reason explains a denial to the model, and an approval request to the
	// people asked.
	Reason string
	// Requirement names who must approve, for RequireApproval.
	Requirement string
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
func AllowAll() Policy {
	return Func(func(context.Context, Action) (Decision, error) { return Decision{Verdict: Allow}, nil })
}

// DenyAll denies every action with reason.
func DenyAll(reason string) Policy {
	return Func(func(context.Context, Action) (Decision, error) {
		return Decision{Verdict: Deny, Reason: reason}, nil
	})
}

// Rule matches tool names by glob and gives a verdict.
type Rule struct {
	// Tools are doublestar globs over tool names ("*", "fs_*").
	Tools       []string `yaml:"tools" json:"tools"`
	Verdict     Verdict  `yaml:"verdict" json:"verdict"`
	Reason      string   `yaml:"reason,omitempty" json:"reason,omitempty"`
	Requirement string   `yaml:"requirement,omitempty" json:"requirement,omitempty"`
}

// Rules is a policy of ordered rules: the first rule whose glob matches the
// tool name decides. A call no rule matches is denied.
type Rules []Rule

// Validate checks every rule and returns the first problem, naming the rule.
func (rs Rules) Validate() error {
	for i, r := range rs {
		switch r.Verdict {
		case Allow, Deny, RequireApproval:
		default:
			return fmt.Errorf("rule %d: verdict %q: want allow, deny or approval", i+1, r.Verdict)
		}
		if len(r.Tools) == 0 {
			return fmt.Errorf("rule %d: tools is empty", i+1)
		}
		for _, g := range r.Tools {
			if !doublestar.ValidatePattern(g) {
				return fmt.Errorf("rule %d: tools: bad glob %q", i+1, g)
			}
		}
	}
	return nil
}

// Decide applies the first matching rule.
func (rs Rules) Decide(_ context.Context, a Action) (Decision, error) {
	for _, r := range rs {
		for _, g := range r.Tools {
			if ok, _ := doublestar.Match(g, a.Tool); ok {
				reason := r.Reason
				if reason == "" && r.Verdict == Deny {
					reason = fmt.Sprintf("the policy does not allow %s", a.Tool)
				}
				return Decision{Verdict: r.Verdict, Reason: reason, Requirement: r.Requirement}, nil
			}
		}
	}
	return Decision{Verdict: Deny, Reason: fmt.Sprintf("no policy rule allows %s", a.Tool)}, nil
}
