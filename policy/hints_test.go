package policy_test

import (
	"context"
	"testing"

	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/tool"
)

// A rule can weigh what a tool says of its effects: destructive MCP tools
// need approval; a tool that says nothing is not taken for destructive.
func TestRulesSeeToolHints(t *testing.T) {
	t.Parallel()
	rs := compile(t, policy.Rules{
		{Name: "destructive", Tools: []string{"*__*"}, When: `hints.destructive`, Verdict: policy.RequireApproval, Requirement: "ops"},
		{Name: "unannotated", Tools: []string{"*__*"}, When: `!hints.stated`, Verdict: policy.Deny, Reason: "says nothing of its effects"},
		{Tools: []string{"*"}, Verdict: policy.Allow},
	})
	for _, tc := range []struct {
		name  string
		hints *tool.Hints
		want  policy.Verdict
	}{
		{"destructive", &tool.Hints{Destructive: true, OpenWorld: true}, policy.RequireApproval},
		{"read-only", &tool.Hints{ReadOnly: true}, policy.Allow},
		{"no hints", nil, policy.Deny},
	} {
		a := call("fs__write_file", `{}`)
		a.Hints = tc.hints
		d, err := rs.Decide(context.Background(), a)
		if err != nil || d.Verdict != tc.want {
			t.Errorf("%s: %+v %v, want %s", tc.name, d, err, tc.want)
		}
	}
}
