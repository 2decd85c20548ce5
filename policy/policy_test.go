package policy_test

import (
	"context"
	"testing"

	"github.com/hitch-dev/hitch/policy"
)

// TestConstant: only the two built-in fixed policies are constant; a rules
// policy or a function may look at anything, or block.
func TestConstant(t *testing.T) {
	for _, c := range []struct {
		name string
		p    policy.Policy
		want bool
	}{
		{"allow all", policy.AllowAll(), true},
		{"deny all", policy.DenyAll("no"), true},
		{"rules", policy.Rules{{Tools: []string{"*"}, Verdict: policy.Allow}}, false},
		{"func", policy.Func(func(context.Context, policy.Action) (policy.Decision, error) {
			return policy.Decision{Verdict: policy.Allow}, nil
		}), false},
		{"nil", nil, false},
	} {
		if got := policy.Constant(c.p); got != c.want {
			t.Errorf("%s: Constant = %v, want %v", c.name, got, c.want)
		}
	}
}
