package policy

import (
	"context"
	"slices"
)

// Description says what a policy decides, for people to read (GET
// /v1/agents/{name}, the console's agent page).
type Description struct {
	// Kind is "allow_all", "deny_all" or "rules".
	Kind string
	// Reason is a deny_all policy's reason.
	Reason string
	// Rules are a rules policy's rules, in order.
	Rules []Rule
}

// Describer is implemented by policies that can describe themselves: the
// built-in ones and Rules. A policy without it is shown as written in Go.
type Describer interface {
	Describe() Description
}

var (
	_ Describer = allowAll{}
	_ Describer = denyAll{}
	_ Describer = Rules(nil)
)

type allowAll struct{}

func (allowAll) Decide(context.Context, Action) (Decision, error) {
	return Decision{Verdict: Allow}, nil
}

func (allowAll) Describe() Description { return Description{Kind: "allow_all"} }

type denyAll struct{ reason string }

func (d denyAll) Decide(context.Context, Action) (Decision, error) {
	return Decision{Verdict: Deny, Reason: d.reason}, nil
}

func (d denyAll) Describe() Description { return Description{Kind: "deny_all", Reason: d.reason} }

// Describe returns the rules, in order.
func (rs Rules) Describe() Description {
	out := make([]Rule, len(rs))
	for i, r := range rs {
		out[i] = Rule{Name: r.Name, Tools: slices.Clone(r.Tools), When: r.When, Verdict: r.Verdict, Reason: r.Reason, Requirement: r.Requirement}
	}
	return Description{Kind: "rules", Rules: out}
}
