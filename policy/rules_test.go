package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/policy"
)

func compile(t *testing.T, rs policy.Rules) policy.Rules {
	t.Helper()
	out, err := rs.Compile()
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return out
}

func call(tool, args string) policy.Action {
	return policy.Action{Kind: policy.CallTool, RunID: "r1", RootID: "r1", Agent: "coder", AgentVersion: 1, Tool: tool, Arguments: json.RawMessage(args)}
}

// The two cases the config docs show.
var (
	writeRules = policy.Rules{
		{Tools: []string{"write", "edit"}, When: `args.path.startsWith("src/") && !args.path.contains("..")`, Verdict: policy.Allow},
		{Tools: []string{"write", "edit"}, When: `args.path.startsWith(".github/")`, Verdict: policy.RequireApproval, Requirement: "ci-owners"},
		{Tools: []string{"write", "edit"}, Verdict: policy.Deny, Reason: "writes go under src/ only"},
		{Tools: []string{"read"}, Verdict: policy.Allow},
	}
	payRules = policy.Rules{
		{Name: "large payments", Tools: []string{"pay"}, When: `args.amount_usd > 100`, Verdict: policy.RequireApproval, Requirement: "payments"},
		{Tools: []string{"pay"}, Verdict: policy.Allow},
	}
)

func TestRulesDecideByArguments(t *testing.T) {
	t.Parallel()
	write, pay := compile(t, writeRules), compile(t, payRules)
	for _, tc := range []struct {
		name        string
		rules       policy.Rules
		a           policy.Action
		verdict     policy.Verdict
		requirement string
		reason      string
	}{
		{"write under src", write, call("write", `{"path": "src/main.go", "content": "x"}`), policy.Allow, "", ""},
		{"edit under src", write, call("edit", `{"path": "src/a/b.go"}`), policy.Allow, "", ""},
		{"write escaping src", write, call("write", `{"path": "src/../.env"}`), policy.Deny, "", "writes go under src/ only"},
		{"write under .github", write, call("write", `{"path": ".github/workflows/ci.yml"}`), policy.RequireApproval, "ci-owners", ""},
		{"write elsewhere", write, call("write", `{"path": "README.md"}`), policy.Deny, "", "writes go under src/ only"},
		{"prefix is not a folder", write, call("write", `{"path": "srcs/x"}`), policy.Deny, "", "writes go under src/ only"},
		{"read has no condition", write, call("read", `{"path": "/etc/passwd"}`), policy.Allow, "", ""},
		{"tool no rule names", write, call("bash", `{"command": "ls"}`), policy.Deny, "", "no policy rule allows bash"},
		{"small payment", pay, call("pay", `{"amount_usd": 40, "to": "acme"}`), policy.Allow, "", ""},
		{"payment at the line", pay, call("pay", `{"amount_usd": 100}`), policy.Allow, "", ""},
		{"payment just over", pay, call("pay", `{"amount_usd": 100.01}`), policy.RequireApproval, "payments", ""},
		{"large payment", pay, call("pay", `{"amount_usd": 2500, "to": "acme"}`), policy.RequireApproval, "payments", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := tc.rules.Decide(context.Background(), tc.a)
			if err != nil {
				t.Fatal(err)
			}
			if d.Verdict != tc.verdict || d.Requirement != tc.requirement {
				t.Fatalf("got %s (%q), want %s (%q); reason %q", d.Verdict, d.Requirement, tc.verdict, tc.requirement, d.Reason)
			}
			if tc.reason != "" && d.Reason != tc.reason {
				t.Fatalf("reason %q, want %q", d.Reason, tc.reason)
			}
		})
	}
}

// A rule whose condition cannot be evaluated denies the call and names
// itself; it never lets a later, wider rule allow it.
func TestRulesConditionErrorsFailClosed(t *testing.T) {
	t.Parallel()
	many := make([]int, 2000)
	bigList, _ := json.Marshal(map[string]any{"items": many})
	for _, tc := range []struct {
		name, when, args, want string
	}{
		{"missing argument", `args.amount_usd > 100`, `{"to": "acme"}`, "no such key"},
		{"wrong argument type", `args.amount_usd > 100`, `{"amount_usd": "lots"}`, "no such overload"},
		{"arguments not an object", `args.amount_usd > 100`, `[1, 2]`, "not a JSON object"},
		{"over the cost limit", `args.items.all(a, args.items.all(b, a == b))`, string(bigList), "cost limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rs := compile(t, policy.Rules{
				{Name: "big spend", Tools: []string{"pay"}, When: tc.when, Verdict: policy.RequireApproval, Requirement: "payments"},
				{Tools: []string{"*"}, Verdict: policy.Allow},
			})
			d, err := rs.Decide(context.Background(), call("pay", tc.args))
			if err != nil {
				t.Fatal(err)
			}
			if d.Verdict != policy.Deny {
				t.Fatalf("got %s, want deny", d.Verdict)
			}
			for _, s := range []string{`policy rule 1 ("big spend")`, "pay", tc.want} {
				if !strings.Contains(d.Reason, s) {
					t.Errorf("reason %q lacks %q", d.Reason, s)
				}
			}
		})
	}
}

// A condition that does not reference args is not spoiled by arguments
// that are not an object.
func TestRulesConditionWithoutArgs(t *testing.T) {
	t.Parallel()
	rs := compile(t, policy.Rules{{Tools: []string{"*"}, When: `tool == "ls"`, Verdict: policy.Allow}})
	d, err := rs.Decide(context.Background(), call("ls", `"not an object"`))
	if err != nil || d.Verdict != policy.Allow {
		t.Fatalf("got %+v, %v; want allow", d, err)
	}
}

func TestRulesConditionSeesTheRun(t *testing.T) {
	t.Parallel()
	a := policy.Action{
		Kind: policy.CallTool, RunID: "child-1", RootID: "root-1", Depth: 1,
		RunMetadata: map[string]string{"tenant": "acme"},
		Agent:       "coder", AgentVersion: 3,
		SessionID: "s-9", SessionMetadata: map[string]string{"channel": "slack"},
		Tool: "pay", Arguments: json.RawMessage(`{"amount_usd": 5, "tags": ["a", "b"], "to": {"iban": "DE00"}}`),
		Requirement: "payments",
	}
	for _, when := range []string{
		`tool == "pay"`,
		`agent.name == "coder" && agent.version == 3`,
		`run.id == "child-1" && run.root_id == "root-1" && run.depth == 1`,
		`run.metadata.tenant == "acme" && run.metadata["tenant"] == "acme"`,
		`session.id == "s-9" && session.metadata.channel == "slack"`,
		`requirement == "payments"`,
		`"b" in args.tags && args.to.iban.startsWith("DE")`,
		`has(args.amount_usd) && !has(args.currency)`,
		`args.amount_usd == 5 && int(args.amount_usd) + 1 == 6`,
		`args.to.iban.lowerAscii() == "de00"`,
		`!("tenant" in session.metadata)`,
	} {
		c, err := policy.CompileCondition(when)
		if err != nil {
			t.Errorf("%s: %v", when, err)
			continue
		}
		ok, err := c.Eval(context.Background(), a)
		if err != nil || !ok {
			t.Errorf("%s: got %v, %v; want true", when, ok, err)
		}
	}
	// A run outside any session sees empty values, not errors.
	c, err := policy.CompileCondition(`session.id == "" && size(session.metadata) == 0 && size(run.metadata) == 0`)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := c.Eval(context.Background(), call("pay", `{}`)); err != nil || !ok {
		t.Fatalf("no session: got %v, %v", ok, err)
	}
}

func TestCompileConditionErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ when, want string }{
		{`args.path.startsWith("src/"`, "column"},
		{`agent.nmae == "coder"`, "undefined field 'nmae'"},
		{`user == "bob"`, "undeclared reference to 'user'"},
		{`args.path`, "gives dyn, not bool"},
		{`tool + "x"`, "gives string, not bool"},
		{`run.depth == "one"`, "no matching overload"},
		{"tool == 'a' &&\n  agent.nmae == 'b'", "line 2, column"},
		{`args.path.matches("(")`, "missing closing )"},
		{"   ", "is empty"},
	} {
		_, err := policy.CompileCondition(tc.when)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error with %q", tc.when, err, tc.want)
		}
	}
}

// Compile reports every problem of every rule, each naming its field.
func TestRulesCompileNamesEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := policy.Rules{
		{Tools: []string{"write"}, When: `args.path.startsWith("src/")`, Verdict: policy.Allow},
		{Tools: []string{"["}, When: `args.amount_usd >`, Verdict: "maybe"},
		{When: `tool`, Verdict: policy.Deny},
	}.Compile()
	var res policy.RuleErrors
	if !errors.As(err, &res) {
		t.Fatalf("got %v, want RuleErrors", err)
	}
	var got []string
	for _, e := range res {
		got = append(got, fmt.Sprintf("%d.%s", e.Rule, e.Field))
	}
	want := "1.verdict 1.tools 1.when 2.tools 2.when"
	if strings.Join(got, " ") != want {
		t.Fatalf("got %v, want %s (%v)", got, want, err)
	}
}

// Rules built in Go without Compile still apply their conditions.
func TestRulesUncompiled(t *testing.T) {
	t.Parallel()
	d, err := payRules.Decide(context.Background(), call("pay", `{"amount_usd": 500}`))
	if err != nil || d.Verdict != policy.RequireApproval {
		t.Fatalf("got %+v, %v", d, err)
	}
	bad := policy.Rules{{Tools: []string{"*"}, When: `nope(`, Verdict: policy.Allow}}
	d, err = bad.Decide(context.Background(), call("pay", `{}`))
	if err != nil || d.Verdict != policy.Deny || !strings.Contains(d.Reason, "policy rule 1") {
		t.Fatalf("a condition that does not compile: got %+v, %v; want a denial naming the rule", d, err)
	}
}

// A decision whose context ends is no decision: the engine fails closed.
func TestRulesContextEnds(t *testing.T) {
	t.Parallel()
	many := make([]int, 3000)
	args, _ := json.Marshal(map[string]any{"items": many})
	rs := compile(t, policy.Rules{{Tools: []string{"*"}, When: `args.items.exists(a, args.items.exists(b, a != b))`, Verdict: policy.Allow}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	<-ctx.Done()
	d, err := rs.Decide(ctx, call("x", string(args)))
	if err == nil {
		t.Fatalf("got %+v, want an error", d)
	}
}

func TestRulesConcurrentDecide(t *testing.T) {
	t.Parallel()
	rs := compile(t, payRules)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				amount := (i*50 + j) % 200
				d, err := rs.Decide(context.Background(), call("pay", fmt.Sprintf(`{"amount_usd": %d}`, amount)))
				want := policy.Allow
				if amount > 100 {
					want = policy.RequireApproval
				}
				if err != nil || d.Verdict != want {
					t.Errorf("amount %d: got %+v, %v", amount, d, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
