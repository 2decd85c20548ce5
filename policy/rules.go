package policy

import (
	"context"
	"fmt"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Rule gives a verdict to the calls whose tool name matches one of its
// globs and, when it has one, whose When condition is true.
type Rule struct {
	// Name, optional, names the rule in reasons and errors; without it
	// the rule is named by its position ("rule 2").
	Name string `yaml:"name,omitempty" json:"name,omitempty"`
	// Tools are doublestar globs over tool names ("*", "fs_*").
	Tools []string `yaml:"tools" json:"tools"`
	// When, optional, is a CEL expression that must be true for the rule
	// to apply (see the package documentation for what it can see).
	When        string  `yaml:"when,omitempty" json:"when,omitempty"`
	Verdict     Verdict `yaml:"verdict" json:"verdict"`
	Reason      string  `yaml:"reason,omitempty" json:"reason,omitempty"`
	Requirement string  `yaml:"requirement,omitempty" json:"requirement,omitempty"`

	// cond is When compiled, set by Rules.Compile.
	cond *Condition
}

// Rules is a policy of ordered rules: the first rule that matches the tool
// name and whose condition holds decides. A call no rule matches is denied.
//
// Compile the rules once (Rules.Compile) before using them: rules whose
// conditions were not compiled are compiled again at every decision.
type Rules []Rule

// RuleError is one problem with one rule.
type RuleError struct {
	Rule    int    // position in the list, from 0
	Field   string // the rule's field: "tools", "when", "verdict"
	Problem string
}

func (e RuleError) Error() string {
	return fmt.Sprintf("rule %d: %s: %s", e.Rule+1, e.Field, e.Problem)
}

// RuleErrors is every problem found in a list of rules, in order.
type RuleErrors []RuleError

func (es RuleErrors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "; ")
}

// Compile checks every rule and compiles its condition. It returns the
// rules ready to decide, or RuleErrors naming every problem.
func (rs Rules) Compile() (Rules, error) {
	var errs RuleErrors
	out := make(Rules, len(rs))
	for i, r := range rs {
		bad := func(field, format string, args ...any) {
			errs = append(errs, RuleError{Rule: i, Field: field, Problem: fmt.Sprintf(format, args...)})
		}
		switch r.Verdict {
		case Allow, Deny, RequireApproval:
		default:
			bad("verdict", "%q: want allow, deny or approval", r.Verdict)
		}
		if len(r.Tools) == 0 {
			bad("tools", "is empty: name the tools, or \"*\" for all")
		}
		for _, g := range r.Tools {
			if !doublestar.ValidatePattern(g) {
				bad("tools", "bad glob %q", g)
			}
		}
		if r.When != "" {
			c, err := CompileCondition(r.When)
			if err != nil {
				bad("when", "%v", err)
			}
			r.cond = c
		}
		out[i] = r
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// Validate checks every rule, conditions included, and returns RuleErrors
// naming every problem, or nil.
func (rs Rules) Validate() error {
	_, err := rs.Compile()
	return err
}

// Decide applies the first rule that matches. A condition that cannot be
// evaluated (an error, or over its cost limit) denies the call, naming the
// rule: the policy fails closed. Decide returns an error only when ctx ends
// first.
func (rs Rules) Decide(ctx context.Context, a Action) (Decision, error) {
	var in *input // built once, for the first rule with a condition
	for i, r := range rs {
		if !r.matches(a.Tool) {
			continue
		}
		if r.When != "" {
			if in == nil {
				in = newInput(a)
			}
			ok, err := r.holds(ctx, in)
			if err != nil {
				if ctx.Err() != nil {
					return Decision{}, fmt.Errorf("evaluate %s: %w", r.label(i), context.Cause(ctx))
				}
				return Decision{Verdict: Deny, Reason: fmt.Sprintf("%s could not be evaluated for %s, so the call is denied: %v", r.label(i), a.Tool, err), Rule: r.label(i)}, nil
			}
			if !ok {
				continue
			}
		}
		reason := r.Reason
		if reason == "" && r.Verdict == Deny {
			reason = fmt.Sprintf("the policy does not allow %s", a.Tool)
		}
		return Decision{Verdict: r.Verdict, Reason: reason, Requirement: r.Requirement, Rule: r.label(i)}, nil
	}
	return Decision{Verdict: Deny, Reason: fmt.Sprintf("no policy rule allows %s", a.Tool), Rule: "no rule matched"}, nil
}

func (r Rule) matches(tool string) bool {
	for _, g := range r.Tools {
		if ok, _ := doublestar.Match(g, tool); ok {
			return true
		}
	}
	return false
}

// holds evaluates the rule's condition, compiling it first if Compile did
// not.
func (r Rule) holds(ctx context.Context, in *input) (bool, error) {
	c := r.cond
	if c == nil {
		var err error
		if c, err = CompileCondition(r.When); err != nil {
			return false, err
		}
	}
	return c.eval(ctx, in)
}

// label names the rule at position i for people.
func (r Rule) label(i int) string {
	if r.Name != "" {
		return fmt.Sprintf("policy rule %d (%q)", i+1, r.Name)
	}
	return fmt.Sprintf("policy rule %d", i+1)
}
