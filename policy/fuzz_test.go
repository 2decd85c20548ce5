package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/policy"
)

// FuzzCompileRule: any rule either compiles or is refused with RuleErrors;
// a compiled rule decides within its cost limit. Nothing panics.
func FuzzCompileRule(f *testing.F) {
	for _, s := range []struct{ glob, when, args string }{
		{"write", `args.path.startsWith("src/") && !args.path.contains("..")`, `{"path": "src/a.go"}`},
		{"pay", `args.amount_usd > 100`, `{"amount_usd": 150}`},
		{"*", `agent.name == "a" && run.depth < 2 && session.metadata.x == "y"`, `{}`},
		{"fs_*", `args.items.all(a, args.items.exists(b, a == b))`, `{"items": [1, 2, 3]}`},
		{"[", `args.path.matches("(")`, `[]`},
		{"x", `[1,2,3].map(x, x * 2).filter(y, y > 2).size() == 2`, `null`},
		{"x", `{"a": 1}.a == 1 ? true : false`, `{"a": {"b": [null, true, 1e308]}}`},
		{"x", "tool == 'a' &&\n  requirement", `{`},
		{"x", `((((((((((true))))))))))`, `{}`},
	} {
		f.Add(s.glob, s.when, s.args)
	}
	f.Fuzz(func(t *testing.T, glob, when, args string) {
		rs, err := policy.Rules{{Tools: []string{glob, "*"}, When: when, Verdict: policy.Allow}}.Compile()
		if err != nil {
			var res policy.RuleErrors
			if !errors.As(err, &res) || len(res) == 0 {
				t.Fatalf("%q: error is not RuleErrors: %v", when, err)
			}
			return
		}
		if !json.Valid([]byte(args)) {
			args = "{}"
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		d, err := rs.Decide(ctx, policy.Action{Kind: policy.CallTool, Tool: "write", Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatalf("%q: no decision within 5s: %v", when, err)
		}
		switch d.Verdict {
		case policy.Allow, policy.Deny:
		default:
			t.Fatalf("%q: verdict %q", when, d.Verdict)
		}
	})
}
