package config

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"

	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/modeltest"
	"github.com/hitch-dev/hitch/policy"
)

func write(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "hitch.yaml")
}

const script = "turns:\n  - text: hi\n"

// demoModel is the head of a config: an empty line and the scripted model
// demo, reading script.yaml; what follows starts at line 4.
const demoModel = "\nmodels:\n  demo: {provider: scripted, script: script.yaml}\n"

// onDemo is a config whose first lines declare the scripted model demo
// (reading script), followed by rest from line 4 on, and its script.
func onDemo(rest string) map[string]string {
	return map[string]string{"script.yaml": script, "hitch.yaml": demoModel + rest}
}

// load writes files (hitch.yaml among them) into a folder and loads the
// config, closed when the test ends.
func load(t testing.TB, files map[string]string) *Config {
	t.Helper()
	cfg, err := Load(write(t, files), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cfg.Close() })
	return cfg
}

// refused writes files (hitch.yaml among them) into a folder, loads the
// config, which must fail, and reports each of want its error does not
// name; it returns the config's path and the error.
func refused(t *testing.T, files map[string]string, want ...string) (string, error) {
	t.Helper()
	path := write(t, files)
	_, err := Load(path, Options{})
	if err == nil {
		t.Fatal("the config loaded")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
	return path, err
}

func TestLoadGoodConfig(t *testing.T) {
	t.Parallel()
	cfg := load(t, onDemo(`agents:
  - name: helper
    model: demo
    tools: [read, bash]
    policy: allow_all
    limits:
      tool_timeout: infinite
      model_attempts: 3
`))
	a, err := cfg.Agent("")
	if err != nil || a.Name() != "helper" || a.Limits().ModelAttempts != 3 || a.Limits().ToolTimeout >= 0 {
		t.Fatalf("agent %v limits %+v err %v", a, a.Limits(), err)
	}
}

func TestProblemsNameFileLineAndField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, yaml string
		want       []string // each "line: field" or fragment that must appear
	}{
		{"unknown key", demoModel + `agents:
  - name: helper
    model: demo
    policy: allow_all
    tols: [read]
`, []string{":8:", "tols"}},
		{"syntax", "agents: [\n  - name: x\n", []string{"hitch.yaml:"}},
		{"every problem at once", `
models:
  demo: {provider: scripted, script: script.yaml}
  other: {provider: nonesuch}
agents:
  - name: helper
    model: missing
    tools: [read, teleport]
    policy: maybe
    limits:
      tool_concurrency: 0
      tool_timeout: soon
`, []string{
			":4: models.other.provider", `"nonesuch"`,
			":7: agents[0].model", `"missing" is not declared`,
			":8: agents[0].tools[1]", `"teleport" is not a tool`,
			":9: agents[0].policy", `"maybe"`,
			":11: agents[0].limits.tool_concurrency", "0: want 1–64",
			":12: agents[0].limits.tool_timeout", `"soon" is not a duration`,
		}},
		{"no policy", demoModel + `agents:
  - name: helper
    model: demo
`, []string{":5: agents[0].policy", "no implicit allow"}},
		{"bad rule", demoModel + `agents:
  - name: helper
    model: demo
    policy:
      - tools: ["*"]
        verdict: perhaps
`, []string{"agents[0].policy[0]", `"perhaps"`}},
		{"bad conditions, every one at once", demoModel + `agents:
  - name: helper
    model: demo
    policy:
      - tools: [write]
        when: args.path.startsWith("src/"
        verdict: allow
      - tools: [write]
        when: agent.nmae == "helper"
        verdict: perhaps
  - name: other
    model: demo
    policy:
      - tools: [pay]
        when: args.amount_usd
        verdict: approval
      - tools: ["*"]
        when: |
          tool == "read" &&
            run.depht == 0
        verdict: allow
`, []string{
			":9: agents[0].policy[0].when", "column",
			":12: agents[0].policy[1].when", "undefined field 'nmae'",
			":13: agents[0].policy[1].verdict", `"perhaps"`,
			":18: agents[1].policy[0].when", "gives dyn, not bool",
			":21: agents[1].policy[1].when", "line 2, column", "undefined field 'depht'",
		}},
		{"build range", demoModel + `agents:
  - name: "bad name"
    model: demo
    policy: allow_all
`, []string{":5: agents[0].name", "want 1–64 letters"}},
		{"bad script", `
models:
  demo: {provider: scripted, script: broken.yaml}
agents:
  - name: helper
    model: demo
    policy: allow_all
`, []string{":3: models.demo", "broken.yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path, err := refused(t, map[string]string{"script.yaml": script, "broken.yaml": "turns: [{text: 1, bogus: 2}]\n", "hitch.yaml": tc.yaml}, tc.want...)
			if !IsProblem(err) {
				t.Fatalf("error is not a config problem: %v", err)
			}
			if msg := err.Error(); !strings.Contains(msg, path) {
				t.Errorf("error does not name the file %s:\n%s", path, msg)
			}
		})
	}
}

func TestMissingFileIsNotAProblem(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"), Options{})
	if err == nil || IsProblem(err) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v", err)
	}
}

func TestSubAgentsBudgetsAndPrices(t *testing.T) {
	t.Parallel()
	path := write(t, map[string]string{"script.yaml": script, "hitch.yaml": `
prices:
  scripted/script: {input: 1, output: 2}
models:
  demo: {provider: scripted, script: script.yaml}
agents:
  - name: boss
    model: demo
    policy: allow_all
    sub_agents: [researcher]
    budget: {tokens: 1000, usd: 0.5, model_calls: 20, tool_calls: 40, wall_time: 10m}
    limits: {max_children: 2, max_depth: 1, max_tokens: 5000, final_turn: true, approval_expiry: 1h}
  - name: researcher
    description: Finds facts.
    model: demo
    policy: allow_all
`})
	cfg, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	boss, err := cfg.Agent("boss")
	if err != nil {
		t.Fatal(err)
	}
	if l := boss.Limits(); l.MaxChildren != 2 || l.MaxTokens != 5000 || !l.FinalTurn || l.ApprovalExpiry.Hours() != 1 {
		t.Errorf("limits %+v", l)
	}
	if p := cfg.Prices()["scripted/script"]; p.Input != 1 || p.Output != 2 || p.CachedInput != 1 {
		t.Errorf("prices %+v", p)
	}
}

func TestSubAgentProblems(t *testing.T) {
	t.Parallel()
	refused(t, onDemo(`agents:
  - name: a
    model: demo
    policy: allow_all
    sub_agents: [b, ghost]
  - name: b
    model: demo
    policy: allow_all
    sub_agents: [a]
    budget: {tokens: -1, wall_time: soon}
`), `agents[0].sub_agents[1]: "ghost" is not an agent`, "delegates to itself", "agents[1].budget.tokens", "agents[1].budget.wall_time")
}

func TestEveryProblemInOnePass(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"unknown keys and ranges together", demoModel + `agents:
  - name: helper
    model: demo
    policy: allow_all
    bogus: 1
    limits:
      model_timeout: 500ms
      approval_expiry: 9999h
      tool_timeout: -1ns
      tol_timeout: 5s
`, []string{":8: agents[0].bogus", ":10: agents[0].limits.model_timeout", `"500ms": want 1s to 24h, or infinite`,
			":11: agents[0].limits.approval_expiry", "want 1s to 8760h, or infinite", ":12: agents[0].limits.tool_timeout", `"-1ns"`,
			":13: agents[0].limits.tol_timeout"}},
		{"agents is not a list", demoModel + `agents: 3
`, []string{":4: agents", "want a list"}},
		{"version is not a number", demoModel + `agents:
  - name: helper
    version: "x"
    model: demo
    policy: allow_all
    limits: {tool_concurrency: 0}
`, []string{":6: agents[0].version", "want a whole number", ":9: agents[0].limits.tool_concurrency"}},
		{"overflow", demoModel + `agents:
  - name: helper
    model: demo
    policy: allow_all
    limits:
      max_tool_result: 99999999999999999999999
`, []string{":9: agents[0].limits.max_tool_result", "too large"}},
		{"budgets that are not amounts", demoModel + `agents:
  - {name: a, model: demo, policy: allow_all, budget: {usd: .nan}}
  - {name: b, model: demo, policy: allow_all, budget: {usd: .inf}}
  - {name: c, model: demo, policy: allow_all, budget: {usd: 1e-300}}
  - {name: "bad name", model: demo, policy: allow_all, version: -1}
`, []string{"agents[0].budget.usd", "agents[1].budget.usd", "agents[2].budget.usd", "agents[3].name", "agents[3].version"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path, err := refused(t, map[string]string{"script.yaml": script, "hitch.yaml": tc.yaml}, tc.want...)
			if !IsProblem(err) {
				t.Fatalf("err = %v", err)
			}
			msg := err.Error()
			for _, bad := range []string{"Infinite", "0m0s", "Go struct", "Go value"} {
				if strings.Contains(msg, bad) {
					t.Errorf("error speaks %q, not the file's terms:\n%s", bad, msg)
				}
			}
			for _, line := range strings.Split(msg, "\n") {
				if !strings.HasPrefix(line, path+":") {
					t.Errorf("problem without a line: %q", line)
				}
			}
		})
	}
}

func TestLoadPolicyConditions(t *testing.T) {
	t.Parallel()
	path := write(t, onDemo(`agents:
  - name: coder
    model: demo
    tools: [read, write]
    policy:
      - tools: [write, edit]
        when: args.path.startsWith("src/") && !args.path.contains("..")
        verdict: allow
      - tools: [write, edit]
        when: args.path.startsWith(".github/")
        verdict: approval
        requirement: ci-owners
      - name: large payments
        tools: [pay]
        when: args.amount_usd > 100
        verdict: approval
        requirement: payments
      - tools: [read, pay]
        verdict: allow
`))
	cfg, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	f, tree, err := Parse(path)
	if err != nil {
		t.Fatal(err)
	}
	pol, probs := policyOf(locator{path: path, tree: tree}, "agents[0].policy", f.Agents[0].Policy)
	if len(probs) > 0 {
		t.Fatal(Problems(probs))
	}
	for _, tc := range []struct {
		tool, args string
		want       policy.Verdict
	}{
		{"write", `{"path": "src/x.go"}`, policy.Allow},
		{"write", `{"path": ".github/workflows/ci.yml"}`, policy.RequireApproval},
		{"write", `{"path": "go.mod"}`, policy.Deny},
		{"pay", `{"amount_usd": 99.5}`, policy.Allow},
		{"pay", `{"amount_usd": 250}`, policy.RequireApproval},
		{"pay", `{"to": "acme"}`, policy.Deny}, // the condition cannot be evaluated
	} {
		d, err := pol.Decide(context.Background(), policy.Action{Kind: policy.CallTool, Tool: tc.tool, Arguments: json.RawMessage(tc.args)})
		if err != nil || d.Verdict != tc.want {
			t.Errorf("%s %s: got %+v, %v; want %s", tc.tool, tc.args, d, err, tc.want)
		}
	}
}

// The policy examples in docs/config.md compile.
func TestDocPolicyExamplesCompile(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, block := range strings.Split(string(b), "```yaml\n")[1:] {
		block = block[:strings.Index(block, "```")]
		if !strings.HasPrefix(block, "    policy:\n") {
			continue
		}
		n++
		var doc struct{ Policy any }
		if err := yaml.Unmarshal([]byte(block), &doc); err != nil {
			t.Fatalf("example %d: %v", n, err)
		}
		tree, err := parser.ParseBytes([]byte(block), 0)
		if err != nil {
			t.Fatalf("example %d: %v", n, err)
		}
		if _, probs := policyOf(locator{path: "docs/config.md", tree: tree}, "policy", doc.Policy); len(probs) > 0 {
			t.Errorf("example %d: %v", n, Problems(probs))
		}
	}
	if n < 2 {
		t.Fatalf("found %d policy examples in docs/config.md, want 2 or more", n)
	}
}

// stream: false reaches the openai provider: the request asks for a whole
// reply, and its tool calls come back.
func TestModelStreamFalse(t *testing.T) {
	t.Parallel()
	srv := modeltest.NewServer(t, modeltest.Exchange{ContentType: "application/json", Body: modeltest.Fixture(t, "../model/openai/testdata/chat_tool.json")})
	cfg := load(t, map[string]string{"hitch.yaml": `
models:
  local:
    provider: openai
    model: qwen2.5-coder:7b
    base_url: ` + srv.URL + `/v1
    stream: false
agents:
  - {name: a, model: local, policy: allow_all}
`})
	req := &model.Request{Messages: []model.Message{{Role: model.RoleUser, Text: "Weather in Paris?"}}}
	reply, err := model.Collect(cfg.Models["local"].Generate(t.Context(), req), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(reply.ToolCalls) != 1 || reply.ToolCalls[0].Name != "get_weather" {
		t.Errorf("reply %+v, want the get_weather call", reply)
	}
	var body map[string]any
	if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	if body["stream"] == true {
		t.Errorf("the request asked for a stream: %v", body)
	}
}

func TestModelStreamProblems(t *testing.T) {
	t.Parallel()
	path := write(t, map[string]string{"hitch.yaml": `
models:
  claude:
    provider: anthropic
    model: claude-sonnet-4-5
    stream: false
  gpt:
    provider: openai
    model: gpt-4o-mini
    api: responses
    stream: false
agents:
  - {name: a, model: gpt, policy: allow_all}
`})
	_, err := Load(path, Options{Getenv: func(string) string { return "" }})
	if err == nil || !IsProblem(err) {
		t.Fatalf("got %v, want problems", err)
	}
	for _, want := range []string{":6: models.claude.stream: is for the openai provider only", ":11: models.gpt.stream: false needs api: chat"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
